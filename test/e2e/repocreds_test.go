package e2e

import (
	"crypto/subtle"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// createPrivateChartApp serves a chart from an HTTPS chart repository
// with its own CA that wants a client certificate and basic auth,
// stores a credential template for it through the API, and syncs an app
// of the chart. It returns the template's password and client key, the
// secrets the scan looks for.
func createPrivateChartApp(t *testing.T) [][]byte {
	t.Helper()
	ns, name := uniq("sec"), uniq("chart")
	password := "chart-pa55-" + name + "-do-not-leak"
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	dir, src := t.TempDir(), t.TempDir()
	files := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: private\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  from: private\n",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := loader.LoadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(ch, dir); err != nil {
		t.Fatal(err)
	}
	files2 := http.FileServer(http.Dir(dir))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "deploy" || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		files2.ServeHTTP(w, r)
	}))
	if srv.TLS, err = pki.ServerConfig(true); err != nil {
		t.Fatal(err)
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}

	tmpl := settings.Repository{URL: srv.URL, Type: settings.RepoTypeHelm, Username: "deploy", Password: password,
		CAData: pki.CA, TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey}
	if code := call(t, http.MethodPost, "/api/v1/repocreds", tmpl, nil); code != http.StatusCreated {
		t.Fatalf("create credential template: status %d", code)
	}
	t.Cleanup(func() {
		_ = bed.settings.DeleteRepoCreds(t.Context(), srv.URL)
	})
	body := map[string]any{
		"name": name, "project": "default",
		"source":      map[string]any{"repoURL": srv.URL, "chart": "private", "targetRevision": "0.1.0"},
		"destination": map[string]any{"server": appspec.InClusterServer, "namespace": ns},
		"syncPolicy":  map[string]any{"syncOptions": []string{"CreateNamespace=true"}, "automated": map[string]any{"prune": true}},
	}
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, 90*time.Second, "private chart synced", func() (bool, string) {
		v := appView(t, name)
		return v.Status.Sync == appspec.SyncSynced, string(v.Status.Sync) + ": " + v.Status.Message
	})
	return [][]byte{[]byte(password), []byte(pki.ClientKey[len("-----BEGIN EC PRIVATE KEY-----\n"):][:40])}
}
