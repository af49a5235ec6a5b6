package source

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestGitTLSCustomCA resolves and checks out a repository from a Git
// HTTPS server with its own CA that requires a client certificate, with
// the registered repository's caData and client certificate, or with a
// credential template's; without the CA or the certificate it is a
// permanent TLS error.
func TestGitTLSCustomCA(t *testing.T) {
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// Push over plain HTTP, then serve the same repositories over HTTPS.
	_, w := fixtureRepo(t, gitServerAt(t, root), "team/tls.git", nil)
	sha := commit(t, w, "one", map[string]string{"app/cm.yaml": "a: 1\n"})
	cfg, err := pki.ServerConfig(true)
	if err != nil {
		t.Fatal(err)
	}
	url := gitServerAt(t, root, testbed.GitServerOptions{TLS: cfg}).URL("team/tls.git")

	full := settings.Repository{URL: url, CAData: pki.CA, TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey}
	template := full
	template.URL = "https://127.0.0.1:"
	noCA, noCert := full, full
	noCA.CAData = ""
	noCert.TLSClientCertData, noCert.TLSClientCertKey = "", ""
	tests := []struct {
		name           string
		repo, template *settings.Repository
		errType        string
	}{
		{name: "registered repository", repo: &full},
		{name: "credential template", template: &template},
		{name: "no CA", repo: &noCA, errType: "TLSFailed"},
		{name: "no client certificate", repo: &noCert, errType: "TLSFailed"},
		{name: "nothing registered", errType: "TLSFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := settings.New(&secretstore.Memory{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.repo != nil {
				if err := st.PutRepo(t.Context(), *tt.repo); err != nil {
					t.Fatal(err)
				}
			}
			if tt.template != nil {
				if err := st.PutRepoCreds(t.Context(), *tt.template); err != nil {
					t.Fatal(err)
				}
			}
			a := newActivities(t, &RegisteredAuth{Repos: st})
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main"})
			if tt.errType != "" {
				wantErrType(t, err, tt.errType)
				return
			}
			if err != nil || out.SHA != sha {
				t.Fatalf("ResolveRevision() = %+v, %v; want %s", out, err, sha)
			}
			dir, err := a.Checkout(t.Context(), url, sha)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "app", "cm.yaml")); err != nil || string(b) != "a: 1\n" {
				t.Fatalf("checked-out file = %q, %v", b, err)
			}
		})
	}
}

// A CA registered after the credential cache was filled is used at once:
// the refused ls-remote rereads the store and runs again.
func TestGitCredentialAddedAfterCache(t *testing.T) {
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	_, w := fixtureRepo(t, gitServerAt(t, root), "team/late.git", nil)
	sha := commit(t, w, "one", map[string]string{"a.yaml": "a: 1\n"})
	cfg, err := pki.ServerConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	url := gitServerAt(t, root, testbed.GitServerOptions{TLS: cfg}).URL("team/late.git")
	st, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	auth := &RegisteredAuth{Repos: st}
	a := newActivities(t, auth)
	if _, err := auth.Auth(t.Context(), url); err != nil { // fills the cache: nothing registered
		t.Fatal(err)
	}
	if err := st.PutRepo(t.Context(), settings.Repository{URL: url, CAData: pki.CA}); err != nil {
		t.Fatal(err)
	}
	out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main", Hard: true})
	if err != nil || out.SHA != sha {
		t.Fatalf("ResolveRevision() = %+v, %v after the CA was registered; want %s", out, err, sha)
	}
}
