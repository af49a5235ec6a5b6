package source

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestGitProxyAndInsecure: a registered repository's proxy carries its
// ls-remote and fetch, unless noProxy names the host; a proxy that is
// down is a retryable error; insecure skips the TLS check of a server
// with an unknown CA, with a warning in the log.
func TestGitProxyAndInsecure(t *testing.T) {
	root := t.TempDir()
	url, w := fixtureRepo(t, gitServerAt(t, root), "team/proxied.git", nil)
	sha := commit(t, w, "one", map[string]string{"a.yaml": "a: 1\n"})
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pki.ServerConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	tlsURL := gitServerAt(t, root, testbed.GitServerOptions{TLS: cfg}).URL("team/proxied.git")
	proxySrv, through := forwardProxy(t)
	proxy := proxySrv.URL

	tests := []struct {
		name         string
		repo         settings.Repository
		viaProxy     bool
		errType      string // "" and retryable: see wantRetryable
		retryable    bool
		warnInsecure bool
	}{
		{name: "through the proxy", repo: settings.Repository{URL: url, Proxy: proxy}, viaProxy: true},
		{name: "noProxy names the host", repo: settings.Repository{URL: url, Proxy: proxy, NoProxy: "example.com,127.0.0.1"}},
		{name: "proxy down", repo: settings.Repository{URL: url, Proxy: "http://" + testbed.ClosedAddr(t)}, retryable: true},
		{name: "insecure", repo: settings.Repository{URL: tlsURL, Insecure: true}, warnInsecure: true},
		{name: "unknown CA without insecure", repo: settings.Repository{URL: tlsURL}, errType: "TLSFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := settings.New(&secretstore.Memory{})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.PutRepo(t.Context(), tt.repo); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			a, err := New(t.TempDir(), &RegisteredAuth{Repos: st}, slog.New(slog.NewTextHandler(&logs, nil)), WithShallowFetch(false))
			if err != nil {
				t.Fatal(err)
			}
			before := through.Load()
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: tt.repo.URL, Revision: "main"})
			switch {
			case tt.retryable:
				wantErrType(t, err, "")
				return
			case tt.errType != "":
				wantErrType(t, err, tt.errType)
				return
			case err != nil || out.SHA != sha:
				t.Fatalf("ResolveRevision() = %+v, %v; want %s", out, err, sha)
			}
			dir, err := a.Checkout(t.Context(), tt.repo.URL, sha)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "a.yaml")); err != nil || string(b) != "a: 1\n" {
				t.Fatalf("checked-out file = %q, %v", b, err)
			}
			// ls-remote, then the fetch's ref discovery and pack.
			if n := through.Load() - before; tt.viaProxy != (n >= 3) || !tt.viaProxy && n != 0 {
				t.Errorf("%d requests through the proxy; via the proxy: %v", n, tt.viaProxy)
			}
			if got := strings.Contains(logs.String(), msgInsecureRepo); got != tt.warnInsecure {
				t.Errorf("insecure warning logged: %v, want %v; log:\n%s", got, tt.warnInsecure, logs.String())
			}
		})
	}
}
