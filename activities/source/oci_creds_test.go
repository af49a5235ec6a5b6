package source

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/internal/testbed/ociregistry"
	"github.com/windlass-cd/windlass/internal/testbed/repostore"
)

const (
	ociUser     = "puller"
	ociPassword = "oci-pa55-do-not-leak"
	ociToken    = "oci-token-do-not-leak"
)

// forwardProxy is an HTTP proxy for plain-HTTP requests that counts
// what it forwards.
func forwardProxy(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL = r.In.URL }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		n.Add(1)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestOCICredentials reads OCI sources from registries that want a
// credential, with what is registered for them in repocred: basic auth,
// a bearer token, a credential template, a TLS registry with its own CA
// that wants a client certificate, and a proxy. Each refusal is a
// permanent error that names no secret and leaves no checkout behind.
func TestOCICredentials(t *testing.T) {
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := pki.ServerConfig(true)
	if err != nil {
		t.Fatal(err)
	}
	basic := ociregistry.StartWith(ociregistry.Options{Username: ociUser, Password: ociPassword})
	t.Cleanup(basic.Close)
	bearer := ociregistry.StartWith(ociregistry.Options{Token: ociToken})
	t.Cleanup(bearer.Close)
	mtls := ociregistry.StartWith(ociregistry.Options{Username: ociUser, Password: ociPassword, TLS: tlsCfg})
	t.Cleanup(mtls.Close)
	proxy, proxied := forwardProxy(t)

	files := tarball(t, tarEntry{Name: "app/cm.yaml", Body: "kind: ConfigMap\n"})
	digests := map[*ociregistry.Registry]string{}
	for _, r := range []*ociregistry.Registry{basic, bearer, mtls} {
		d, err := r.Push(t.Context(), "team/app", []string{"1.0.0"}, tgzLayer(files))
		if err != nil {
			t.Fatal(err)
		}
		digests[r] = d
	}
	missing := "sha256:" + strings.Repeat("cd", 32)
	withCA := settings.Repository{URL: mtls.URL("team/app"), Username: ociUser, Password: ociPassword,
		CAData: pki.CA, TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey}
	noCert := withCA
	noCert.TLSClientCertData, noCert.TLSClientCertKey = "", ""
	tests := []struct {
		name            string
		reg             *ociregistry.Registry
		repos, tmpls    []settings.Repository
		rev             string // default 1.0.0
		errType, errMsg string
		viaProxy        bool
	}{
		{name: "basic", reg: basic, repos: []settings.Repository{{URL: basic.URL("team/app"), Type: settings.RepoTypeOCI, Username: ociUser, Password: ociPassword}}},
		{name: "bearer", reg: bearer, repos: []settings.Repository{{URL: bearer.URL("team/app"), Type: settings.RepoTypeOCI, BearerToken: ociToken}}},
		{name: "template", reg: basic, tmpls: []settings.Repository{{URL: "oci://" + basic.Host + "/team/", Username: ociUser, Password: ociPassword}}},
		{name: "CA and client certificate", reg: mtls, repos: []settings.Repository{withCA}},
		{name: "proxy", reg: basic, viaProxy: true, repos: []settings.Repository{{URL: basic.URL("team/app"), Username: ociUser, Password: ociPassword, Proxy: proxy.URL}}},
		{name: "wrong password", reg: basic, repos: []settings.Repository{{URL: basic.URL("team/app"), Username: ociUser, Password: "wrong-do-not-leak"}},
			errType: "AuthenticationFailed", errMsg: "refused the request"},
		{name: "wrong token", reg: bearer, repos: []settings.Repository{{URL: bearer.URL("team/app"), BearerToken: "wrong-do-not-leak"}},
			errType: "AuthenticationFailed", errMsg: "refused the request"},
		{name: "no credential", reg: basic, errType: "AuthenticationFailed", errMsg: "none is registered"},
		{name: "digest that does not exist", reg: basic, rev: missing, errType: "RevisionNotFound", errMsg: missing,
			repos: []settings.Repository{{URL: basic.URL("team/app"), Username: ociUser, Password: ociPassword}}},
		{name: "no CA", reg: mtls, repos: []settings.Repository{{URL: mtls.URL("team/app"), Username: ociUser, Password: ociPassword, Insecure: false, TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey}},
			errType: "TLSFailed", errMsg: "caData"},
		{name: "no client certificate", reg: mtls, repos: []settings.Repository{noCert}, errType: "TLSFailed", errMsg: "client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			creds := &RegisteredAuth{Repos: repostore.New(t, tt.repos, tt.tmpls)}
			a := newActivities(t, creds)
			repoURL, rev := tt.reg.URL("team/app"), tt.rev
			// The API's connection test agrees with the activities.
			if err := CheckOCIRepository(t.Context(), repoURL, creds, 0); (err != nil) != (tt.errType != "" && tt.errType != "RevisionNotFound") {
				t.Fatalf("CheckOCIRepository() = %v; want an error: %v", err, tt.errType != "")
			}
			if rev == "" {
				rev = "1.0.0"
			}
			before := proxied.Load()
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: repoURL, Revision: rev})
			if tt.errType != "" {
				wantErrType(t, err, tt.errType)
				if !strings.Contains(err.Error(), tt.errMsg) || strings.Contains(err.Error(), "do-not-leak") {
					t.Fatalf("error %q: want it to say %q and name no secret", err, tt.errMsg)
				}
				// A checkout of a known digest is refused the same way.
				if tt.errType != "RevisionNotFound" {
					_, err = a.Checkout(t.Context(), repoURL, digests[tt.reg])
					wantErrType(t, failure.Activity(err), tt.errType)
				}
				if left := dirNames(t, a.cacheDir+"/trees"); len(left) > 0 {
					t.Errorf("checkouts left behind: %v", left)
				}
				return
			}
			if err != nil || out.SHA != digests[tt.reg] {
				t.Fatalf("ResolveRevision() = %+v, %v; want %s", out, err, digests[tt.reg])
			}
			dir, err := a.Checkout(t.Context(), repoURL, out.SHA)
			if err != nil {
				t.Fatal(err)
			}
			if got := readTree(t, dir)["app/cm.yaml"]; got != "kind: ConfigMap\n" {
				t.Fatalf("app/cm.yaml = %q", got)
			}
			if n := proxied.Load() - before; tt.viaProxy != (n > 0) {
				t.Fatalf("%d requests went through the proxy; want some: %v", n, tt.viaProxy)
			}
		})
	}
}
