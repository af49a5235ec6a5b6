package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
)

// appSetConfigMap is a directory's one manifest.
const appSetConfigMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: %s}
data: {dir: %s}
`

// dirSet is a git-directories set over repoURL's top directories; its
// apps are <prefix>-<dir> in namespace ns.
func dirSet(name, repoURL, prefix, ns, policy string, preserve bool) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s}
spec:
  generators:
  - git:
      repoURL: %s
      revision: HEAD
      directories: [{path: '*'}, {path: 'skip', exclude: true}]
  syncPolicy: {applicationsSync: %s, preserveResourcesOnDeletion: %t}
  template:
    metadata: {name: '%s-{{path.basename}}'}
    spec:
      project: default
      source: {repoURL: %s, targetRevision: HEAD, path: '{{path}}'}
      destination: {server: 'https://kubernetes.default.svc', namespace: %s}
      syncPolicy: {automated: {}, syncOptions: [CreateNamespace=true]}
`, name, repoURL, policy, preserve, prefix, repoURL, ns)
}

// setApps reads the set and the names of its apps.
func setApps(t *testing.T, name string) (api.AppSetDetail, []string) {
	t.Helper()
	var d api.AppSetDetail
	if code := call(t, http.MethodGet, "/api/v1/applicationsets/"+name, nil, &d); code != http.StatusOK {
		t.Fatalf("get set %s: status %d", name, code)
	}
	var names []string
	for _, a := range d.Applications {
		names = append(names, a.Name)
	}
	return d, names
}

func dirFiles(dirs ...string) map[string]string {
	files := map[string]string{}
	for _, d := range dirs {
		files[d+"/cm.yaml"] = fmt.Sprintf(appSetConfigMap, "cm-"+d, d)
	}
	return files
}

func appNames(prefix string, dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		out = append(out, prefix+"-"+d)
	}
	slices.Sort(out)
	return out
}

// A git-directories set over five directories makes five apps, a sixth
// directory pushed (and announced by a webhook) a sixth, and a directory
// removed deletes its app; under create-only the app stays; deleting the
// set deletes its apps.
func TestAppSetGitDirectories(t *testing.T) {
	set, prefix, ns := uniq("dirs"), uniq("d"), uniq("appset")
	repoURL, work := newRepo(t, set)
	push(t, work, dirFiles("a", "b", "c", "d", "e", "skip"))
	var created api.AppSetDetail
	if code := call(t, http.MethodPost, "/api/v1/applicationsets", dirSet(set, repoURL, prefix, ns, "sync", false), &created); code != http.StatusCreated {
		t.Fatalf("create set: status %d %+v", code, created)
	}
	waitApps := func(what string, want []string) {
		t.Helper()
		eventually(t, 2*time.Minute, what, func() (bool, string) {
			d, names := setApps(t, set)
			return slices.Equal(names, want), fmt.Sprintf("apps %v, status %+v", names, d.Status)
		})
	}
	waitApps("five apps", appNames(prefix, "a", "b", "c", "d", "e"))
	// The list's row names the generator, with no read of the set.
	wantGen := []string{"git directories " + strings.TrimSuffix(path.Base(repoURL), ".git") + " *"}
	eventually(t, time.Minute, "the set's row names its generator", func() (bool, string) {
		var l api.AppSetList
		call(t, http.MethodGet, "/api/v1/applicationsets", nil, &l)
		for _, r := range l.Items {
			if r.Name == set {
				return slices.Equal(r.Generators, wantGen), fmt.Sprintf("generators %q, want %q", r.Generators, wantGen)
			}
		}
		return false, "the set is not listed"
	})
	eventually(t, 2*time.Minute, "app a synced", func() (bool, string) {
		_, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm-a", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})

	// A sixth directory, announced by a GitHub push webhook.
	sha := push(t, work, dirFiles("f"))
	if code := sendGitHubPush(t, repoURL, sha, bed.hookSecret); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	waitApps("a sixth app after the webhook", appNames(prefix, "a", "b", "c", "d", "e", "f"))
	// The app is listed while its pass runs; the pass records its reason
	// when it ends.
	var d api.AppSetDetail
	eventually(t, time.Minute, "the webhook's pass recorded", func() (bool, string) {
		d, _ = setApps(t, set)
		return strings.HasPrefix(d.Status.LastReason, "refresh: github webhook"), "last pass: " + d.Status.LastReason
	})

	// A directory removed: its app goes (refreshed on demand).
	if err := work.Remove("a"); err != nil {
		t.Fatal(err)
	}
	push(t, work, nil)
	if code := call(t, http.MethodPost, "/api/v1/applicationsets/"+set+"/refresh", nil, &d); code != http.StatusOK {
		t.Fatalf("refresh: status %d", code)
	}
	if d.Status.LastChange == nil || !slices.Contains(d.Status.LastChange.Deleted, "default/"+prefix+"-a") {
		t.Errorf("refresh: last change %+v, want %s-a deleted", d.Status.LastChange, prefix)
	}
	waitApps("app a gone", appNames(prefix, "b", "c", "d", "e", "f"))
	eventually(t, time.Minute, "a's resources deleted with it", func() (bool, string) {
		_, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm-a", metav1.GetOptions{})
		return err != nil, "cm-a still there"
	})

	// Under create-only, a removed directory's app stays.
	if code := call(t, http.MethodPut, "/api/v1/applicationsets/"+set, dirSet(set, repoURL, prefix, ns, "create-only", false), &d); code != http.StatusOK {
		t.Fatalf("update set: status %d %+v", code, d)
	}
	if err := work.Remove("b"); err != nil {
		t.Fatal(err)
	}
	push(t, work, nil)
	call(t, http.MethodPost, "/api/v1/applicationsets/"+set+"/refresh", nil, &d)
	if d.Status.LastChange != nil && slices.Contains(d.Status.LastChange.Deleted, "default/"+prefix+"-b") || !slices.Contains(d.Status.Apps, "default/"+prefix+"-b") {
		t.Errorf("create-only deleted b: %+v", d.Status)
	}
	if _, names := setApps(t, set); !slices.Contains(names, prefix+"-b") {
		t.Errorf("create-only: apps %v lack b", names)
	}

	// Deleting the set deletes its apps.
	var res struct{ Deleted []string }
	if code := call(t, http.MethodDelete, "/api/v1/applicationsets/"+set, nil, &res); code != http.StatusOK || len(res.Deleted) != 5 {
		t.Fatalf("delete set: status %d, deleted %v", code, res.Deleted)
	}
	var list api.AppList
	eventually(t, time.Minute, "the set's apps gone", func() (bool, string) {
		call(t, http.MethodGet, "/api/v1/applications?search="+prefix, nil, &list)
		return len(list.Items) == 0, fmt.Sprintf("%d apps", len(list.Items))
	})
}

// preserveResourcesOnDeletion: a removed directory's app goes, its
// resources stay.
func TestAppSetPreserveResources(t *testing.T) {
	set, prefix, ns := uniq("keep"), uniq("k"), uniq("appset")
	repoURL, work := newRepo(t, set)
	push(t, work, dirFiles("a", "b"))
	if code := call(t, http.MethodPost, "/api/v1/applicationsets", dirSet(set, repoURL, prefix, ns, "sync", true), nil); code != http.StatusCreated {
		t.Fatalf("create set: status %d", code)
	}
	eventually(t, 2*time.Minute, "a synced", func() (bool, string) {
		_, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm-a", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if err := work.Remove("a"); err != nil {
		t.Fatal(err)
	}
	push(t, work, nil)
	var d api.AppSetDetail
	call(t, http.MethodPost, "/api/v1/applicationsets/"+set+"/refresh", nil, &d)
	eventually(t, time.Minute, "app a gone", func() (bool, string) {
		_, names := setApps(t, set)
		return slices.Equal(names, []string{prefix + "-b"}), fmt.Sprint(names)
	})
	if _, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm-a", metav1.GetOptions{}); err != nil {
		t.Errorf("preserveResourcesOnDeletion: cm-a deleted: %v", err)
	}
	call(t, http.MethodDelete, "/api/v1/applicationsets/"+set, nil, nil)
}

// Bad input: the set's status says why and no app is written.
func TestAppSetBadInput(t *testing.T) {
	repoURL, work := newRepo(t, uniq("bad"))
	push(t, work, dirFiles("a", "b"))
	tests := []struct {
		name, template, kind string
	}{
		{"invalid app name", "Bad_{{path.basename}}", "InvalidSpec"},
		{"duplicate app", "same", "DuplicateApplication"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := uniq("bad")
			body := strings.Replace(dirSet(set, repoURL, "x", "bad", "sync", false), "'x-{{path.basename}}'", "'"+tc.template+"'", 1)
			if code := call(t, http.MethodPost, "/api/v1/applicationsets", body, nil); code != http.StatusCreated {
				t.Fatalf("create: status %d", code)
			}
			eventually(t, time.Minute, "the error in the status", func() (bool, string) {
				d, names := setApps(t, set)
				if len(names) > 0 {
					t.Fatalf("apps written: %v", names)
				}
				return d.Status.ErrorKind == tc.kind && d.Status.Error != "", fmt.Sprintf("%+v", d.Status)
			})
			call(t, http.MethodDelete, "/api/v1/applicationsets/"+set, nil, nil)
		})
	}
}

// A matrix of the test bed registered as two named clusters and a
// repository's directories makes one app per cluster and directory.
func TestAppSetMatrixClustersDirectories(t *testing.T) {
	cfg := bed.env.Cluster.Config
	label, set := uniq("fleet"), uniq("matrix")
	clusters := []string{label + "-east", label + "-west"}
	for _, name := range clusters {
		body := map[string]any{"name": name, "server": cfg.Host, "caData": pemOf(t, cfg.CAData, cfg.CAFile),
			"certData": pemOf(t, cfg.CertData, cfg.CertFile), "keyData": pemOf(t, cfg.KeyData, cfg.KeyFile), "labels": map[string]string{"fleet": label}}
		var problem map[string]any
		if code := call(t, http.MethodPost, "/api/v1/clusters", body, &problem); code != http.StatusCreated {
			t.Fatalf("register cluster %s: status %d: %v", name, code, problem)
		}
	}
	repoURL, work := newRepo(t, set)
	push(t, work, dirFiles("api", "web"))
	body := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s}
spec:
  generators:
  - matrix:
      generators:
      - clusters: {selector: {matchLabels: {fleet: %s}}}
      - git: {repoURL: %s, revision: HEAD, directories: [{path: '*'}]}
  template:
    metadata: {name: '{{name}}-{{path.basename}}'}
    spec:
      project: default
      source: {repoURL: %s, targetRevision: HEAD, path: '{{path}}'}
      destination: {name: '{{name}}', namespace: '{{path.basename}}'}
`, set, label, repoURL, repoURL)
	if code := call(t, http.MethodPost, "/api/v1/applicationsets", body, nil); code != http.StatusCreated {
		t.Fatalf("create set: status %d", code)
	}
	want := []string{clusters[0] + "-api", clusters[0] + "-web", clusters[1] + "-api", clusters[1] + "-web"}
	eventually(t, 2*time.Minute, "an app per cluster and directory", func() (bool, string) {
		d, names := setApps(t, set)
		return slices.Equal(names, want), fmt.Sprintf("apps %v, status %+v", names, d.Status)
	})
	var res struct{ Deleted []string }
	if code := call(t, http.MethodDelete, "/api/v1/applicationsets/"+set+"?cascade=false", nil, &res); code != http.StatusOK || len(res.Deleted) != 0 {
		t.Fatalf("delete set keeping apps: status %d, deleted %v", code, res.Deleted)
	}
	for _, n := range want {
		if code := call(t, http.MethodDelete, "/api/v1/applications/"+n+"?cascade=orphan", nil, nil); code != http.StatusOK {
			t.Errorf("the kept app %s: delete status %d", n, code)
		}
	}
}

// A plugin that does not answer in time and a pull-request API that
// answers 500 are errors in the set's status, with no app written.
func TestAppSetSourceFailures(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	plugin := uniq("slow")
	if err := bed.store.Put(t.Context(), "windlass-appset-plugin-"+plugin, map[string][]byte{
		"baseUrl": []byte(slow.URL), "requestTimeout": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, generator, want string
	}{
		{"plugin timeout", "plugin: {configMapRef: {name: " + plugin + "}}", plugin},
		{"pull request API 500", "pullRequest: {github: {owner: o, repo: r, api: '" + broken.URL + "'}}", "500"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := uniq("src")
			body := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s}
spec:
  generators:
  - %s
  template:
    metadata: {name: '%s-x'}
    spec:
      project: default
      source: {repoURL: 'https://git.example/r.git', path: '.'}
      destination: {server: 'https://kubernetes.default.svc', namespace: x}
`, set, tc.generator, set)
			if code := call(t, http.MethodPost, "/api/v1/applicationsets", body, nil); code != http.StatusCreated {
				t.Fatalf("create: status %d", code)
			}
			eventually(t, time.Minute, "the error in the status", func() (bool, string) {
				d, names := setApps(t, set)
				if len(names) > 0 {
					t.Fatalf("apps written: %v", names)
				}
				return d.Status.ErrorKind == "GeneratorSourceFailed" && strings.Contains(d.Status.Error, tc.want), fmt.Sprintf("%+v", d.Status)
			})
			call(t, http.MethodDelete, "/api/v1/applicationsets/"+set, nil, nil)
		})
	}
}
