package render

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/repocred"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/internal/testbed/repostore"
)

const (
	helmUser     = "deploy"
	helmPassword = "chart-pa55-do-not-leak"
	helmToken    = "chart-token-do-not-leak"
)

// requireAuth answers 401 unless the request carries basic auth
// helmUser:helmPassword or the bearer helmToken.
func requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		basic := ok && u == helmUser && subtle.ConstantTimeCompare([]byte(p), []byte(helmPassword)) == 1
		bearer := r.Header.Get("Authorization") == "Bearer "+helmToken
		if !basic && !bearer {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// privateHelmRepo serves the charts of newHelmTestRepo's set behind
// requireAuth, over HTTPS with tlsCfg when it is set. Chart URLs in the
// index point at chartBase when it is set (another host).
func privateHelmRepo(t *testing.T, dir string, tlsCfg *testbed.TLSPKI, clientCert bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(requireAuth(http.FileServer(http.Dir(dir))))
	if tlsCfg != nil {
		cfg, err := tlsCfg.ServerConfig(clientCert)
		if err != nil {
			t.Fatal(err)
		}
		srv.TLS = cfg
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// helmChartsDir packages demo 1.0.0, dep 1.0.0 and parent 1.0.0 (which
// depends on dep ~1.0.0 from depRepo) into a new directory.
func helmChartsDir(t *testing.T, depRepo string) string {
	t.Helper()
	dir := t.TempDir()
	helmPackage(t, dir, helmDemoChart("demo", "1.0.0", nil))
	helmPackage(t, dir, helmDemoChart("dep", "1.0.0", nil))
	helmPackage(t, dir, helmDemoChart("parent", "1.0.0", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n  - name: dep\n    version: \"~1.0.0\"\n    repository: " + depRepo + "\n",
	}))
	return dir
}

func writeHelmIndex(t *testing.T, dir, baseURL string) {
	t.Helper()
	idx, err := repo.IndexDirectory(dir, baseURL)
	if err != nil {
		t.Fatal(err)
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// credsRenderer is a Renderer whose credentials come from a settings
// store holding repos and templates, through repocred as in the worker.
func credsRenderer(t *testing.T, repos, templates []settings.Repository) *Renderer {
	t.Helper()
	st := repostore.New(t, repos, templates)
	res, err := repocred.NewResolver(st, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &Renderer{cacheDir: t.TempDir(), creds: res}
}

// TestHelmPrivateRepos renders charts from repositories that need a
// credential: basic auth, a bearer token, a credential template, a
// client-certificate TLS server with its own CA, a chart dependency from
// the private repository, and chart URLs on another host
// (passCredentials). Each render matches `helm template` given the same
// credential; each refused credential is a permanent error that names no
// secret.
func TestHelmPrivateRepos(t *testing.T) {
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	// Plain HTTP with basic auth; its parent depends on its own dep.
	plainDir := t.TempDir()
	plain := privateHelmRepo(t, plainDir, nil, false)
	copyDir(t, helmChartsDir(t, plain.URL), plainDir)
	writeHelmIndex(t, plainDir, plain.URL)
	// HTTPS with a private CA and a required client certificate.
	mtlsDir := t.TempDir()
	mtls := privateHelmRepo(t, mtlsDir, pki, true)
	copyDir(t, helmChartsDir(t, mtls.URL), mtlsDir)
	writeHelmIndex(t, mtlsDir, mtls.URL)
	// An index whose chart URLs are on the plain server: another host.
	elsewhereDir := t.TempDir()
	elsewhere := privateHelmRepo(t, elsewhereDir, nil, false)
	copyDir(t, plainDir, elsewhereDir)
	writeHelmIndex(t, elsewhereDir, plain.URL)

	basic := settings.Repository{Type: settings.RepoTypeHelm, Username: helmUser, Password: helmPassword}
	withURL := func(r settings.Repository, u string) settings.Repository { r.URL = u; return r }
	tlsCred := settings.Repository{Type: settings.RepoTypeHelm, URL: mtls.URL, Username: helmUser, Password: helmPassword,
		CAData: pki.CA, TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey}
	certFile, keyFile, caFile := helmWriteTemp(t, "client.crt", pki.ClientCert), helmWriteTemp(t, "client.key", pki.ClientKey), helmWriteTemp(t, "ca.crt", pki.CA)
	userArgs := []string{"--username", helmUser, "--password", helmPassword}

	tests := []struct {
		name      string
		repos     []settings.Repository
		templates []settings.Repository
		repoURL   string
		chart     string
		cliArgs   []string // nil: the render must fail
		refused   string   // the error's hint when it fails
	}{
		// helm template fetches no missing dependency: parent's
		// renders are checked by object (TestHelmRepoDependencies).
		{name: "basic auth", repos: []settings.Repository{withURL(basic, plain.URL)}, repoURL: plain.URL, chart: "demo", cliArgs: userArgs},
		{name: "bearer token", repos: []settings.Repository{{Type: settings.RepoTypeHelm, URL: plain.URL, BearerToken: helmToken}}, repoURL: plain.URL, chart: "demo",
			cliArgs: userArgs},
		{name: "credential template", templates: []settings.Repository{withURL(basic, "http://127.0.0.1:")}, repoURL: plain.URL, chart: "demo", cliArgs: userArgs},
		{name: "dependency from the private repository", repos: []settings.Repository{withURL(basic, plain.URL)}, repoURL: plain.URL, chart: "parent", cliArgs: userArgs},
		{name: "client certificate and private CA", repos: []settings.Repository{tlsCred}, repoURL: mtls.URL, chart: "demo",
			cliArgs: append([]string{"--ca-file", caFile, "--cert-file", certFile, "--key-file", keyFile}, userArgs...)},
		{name: "dependency over client-certificate TLS", repos: []settings.Repository{tlsCred}, repoURL: mtls.URL, chart: "parent", cliArgs: userArgs},
		{name: "pass credentials to another host", repos: []settings.Repository{func() settings.Repository {
			r := withURL(basic, elsewhere.URL)
			r.PassCredentials = true
			return r
		}()}, repoURL: elsewhere.URL, chart: "demo", cliArgs: append([]string{"--pass-credentials"}, userArgs...)},

		{name: "no credential", repoURL: plain.URL, chart: "demo", refused: "no credential is registered"},
		{name: "wrong password", repos: []settings.Repository{{Type: settings.RepoTypeHelm, URL: plain.URL, Username: helmUser, Password: "wrong-pa55-do-not-leak"}},
			repoURL: plain.URL, chart: "demo", refused: "refused the credential"},
		{name: "credential kept from another host", repos: []settings.Repository{withURL(basic, elsewhere.URL)}, repoURL: elsewhere.URL, chart: "demo",
			refused: "only with passCredentials"},
		{name: "unknown CA", repos: []settings.Repository{func() settings.Repository { r := tlsCred; r.CAData = ""; return r }()},
			repoURL: mtls.URL, chart: "demo", refused: "caData"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := credsRenderer(t, tt.repos, tt.templates)
			in := toolInput{AppName: "rel", Namespace: "ns", Source: SourceRequest{Source: appspec.Source{RepoURL: tt.repoURL, Chart: tt.chart}, SHA: "1.0.0"}}
			objs, err := r.renderHelmRepoChart(t.Context(), in)
			if tt.cliArgs == nil {
				switch {
				case err == nil:
					t.Fatal("render succeeded, want a refusal")
				case !errors.Is(err, ErrChartRepo) || failure.TypeOf(err) == "":
					t.Fatalf("error %v is not a permanent chart repository error", err)
				case !strings.Contains(err.Error(), tt.refused):
					t.Fatalf("error %q does not say %q", err, tt.refused)
				case strings.Contains(err.Error(), "do-not-leak"):
					t.Fatalf("error %q names a secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.chart == "parent" {
				got := map[string]string{}
				for _, o := range objs {
					got[o.GetName()], _, _ = unstructured.NestedString(o.Object, "data", "version")
				}
				if d := gocmp.Diff(map[string]string{"rel-parent": "1.0.0", "rel-dep": "1.0.0"}, got); d != "" {
					t.Fatalf("objects (-want +got):\n%s", d)
				}
				return
			}
			args := append([]string{"template", "rel", tt.chart, "--repo", tt.repoURL, "--version", "1.0.0", "-n", "ns", "--include-crds"}, tt.cliArgs...)
			want := helmCLICanon(t, runHelmCLI(t, t.TempDir(), args...))
			if d := gocmp.Diff(want, helmCanon(t, objs)); d != "" {
				t.Fatalf("render differs from helm template (-cli +ours):\n%s", d)
			}
			if v, err := r.ResolveChartVersion(t.Context(), tt.repoURL, tt.chart, "~1.0"); err != nil || v != "1.0.0" {
				t.Fatalf("ResolveChartVersion() = %q, %v", v, err)
			}
		})
	}
}

// TestHelmPrivateOCI pulls a chart from an OCI registry that wants basic
// auth, as `helm registry login` would, and compares the render with the
// helm CLI's; a wrong password is a permanent error.
func TestHelmPrivateOCI(t *testing.T) {
	g := &helmOCIRegistry{blobs: map[string][]byte{}, manifests: map[string]map[string][]byte{}, tags: map[string][]string{}}
	pkgs := t.TempDir()
	for _, v := range []string{"1.0.0", "1.2.0"} {
		g.push(t, "charts/demo", helmPackage(t, pkgs, helmDemoChart("demo", v, nil)))
	}
	srv := httptest.NewServer(requireAuth(g))
	t.Cleanup(srv.Close)
	repoURL := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"

	r := credsRenderer(t, []settings.Repository{{Type: settings.RepoTypeHelm, URL: repoURL, Username: helmUser, Password: helmPassword}}, nil)
	if v, err := r.ResolveChartVersion(t.Context(), repoURL, "demo", "~1.2"); err != nil || v != "1.2.0" {
		t.Fatalf("ResolveChartVersion() = %q, %v", v, err)
	}
	objs, err := r.renderHelmRepoChart(t.Context(), toolInput{AppName: "rel", Namespace: "ns",
		Source: SourceRequest{Source: appspec.Source{RepoURL: repoURL, Chart: "demo"}, SHA: "1.2.0"}})
	if err != nil {
		t.Fatal(err)
	}
	want := helmCLICanon(t, runHelmCLI(t, pkgs, "template", "rel", repoURL+"/demo", "--version", "1.2.0", "--plain-http", "-n", "ns", "--include-crds",
		"--username", helmUser, "--password", helmPassword))
	if d := gocmp.Diff(want, helmCanon(t, objs)); d != "" {
		t.Fatalf("render differs from helm template (-cli +ours):\n%s", d)
	}

	for name, r := range map[string]*Renderer{
		"wrong password": credsRenderer(t, []settings.Repository{{Type: settings.RepoTypeHelm, URL: repoURL, Username: helmUser, Password: "wrong-do-not-leak"}}, nil),
		"no credential":  credsRenderer(t, nil, nil),
	} {
		_, err := r.ResolveChartVersion(t.Context(), repoURL, "demo", "")
		if !errors.Is(err, ErrChartRepo) || failure.TypeOf(err) == "" || strings.Contains(err.Error(), "do-not-leak") {
			t.Fatalf("%s: error = %v, want a permanent chart repository error without the secret", name, err)
		}
	}
}

// copyDir copies the regular files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A credential stored after the lookup's cache was filled is used at
// once: the refused request rereads the store and runs again.
func TestHelmCredentialAddedAfterCache(t *testing.T) {
	dir := t.TempDir()
	srv := privateHelmRepo(t, dir, nil, false)
	copyDir(t, helmChartsDir(t, srv.URL), dir)
	writeHelmIndex(t, dir, srv.URL)
	st, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := repocred.NewResolver(st, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r := &Renderer{cacheDir: t.TempDir(), creds: res}
	if _, err := res.Lookup(t.Context(), srv.URL); err != nil { // fills the cache: nothing stored
		t.Fatal(err)
	}
	if err := st.PutRepoCreds(t.Context(), settings.Repository{URL: srv.URL, Username: helmUser, Password: helmPassword}); err != nil {
		t.Fatal(err)
	}
	v, err := r.ResolveChartVersion(t.Context(), srv.URL, "demo", "")
	if err != nil || v != "1.0.0" {
		t.Fatalf("ResolveChartVersion() = %q, %v after the credential was stored", v, err)
	}
}
