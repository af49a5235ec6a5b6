package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/workflows"
)

var (
	crdGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	argoAppGVR     = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	argoProjectGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	deploymentGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	serviceGVR     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// installArgoCRDs applies deploy/crds and waits until their kinds serve.
func installArgoCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	for _, f := range []string{"applications.yaml", "appprojects.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		force := true
		if _, err := dyn.Resource(crdGVR).Patch(t.Context(), strings.TrimSuffix(f, ".yaml")+".argoproj.io", types.ApplyPatchType, js,
			metav1.PatchOptions{FieldManager: "e2e-migrate", Force: &force}); err != nil {
			t.Fatalf("apply CRD %s: %v", f, err)
		}
	}
	eventually(t, 30*time.Second, "Argo CD kinds served", func() (bool, string) {
		for _, gvr := range []schema.GroupVersionResource{argoAppGVR, argoProjectGVR} {
			if _, err := dyn.Resource(gvr).Namespace("default").List(t.Context(), metav1.ListOptions{Limit: 1}); err != nil {
				return false, err.Error()
			}
		}
		return true, ""
	})
}

// createYAML creates an object from YAML with kubectl's client-side
// field manager, as `kubectl apply` would have, and returns it.
func createYAML(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	got, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		t.Fatalf("create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
	return got
}

// A live Argo CD's namespace is taken over: the dry run prints the plan
// and writes nothing; a running application controller stops the real
// run; once it is scaled to 0 the apps, projects and repositories exist in
// Windlass; bad input is refused row by row; Argo CD's objects are never
// written; the first sync recreates nothing Argo CD deployed.
func TestMigrateArgoCD(t *testing.T) {
	dyn, err := dynamic.NewForConfig(bed.env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	installArgoCRDs(t, dyn)
	cli := windlassCLI(t)
	argoNS, appNS := uniq("argocd"), uniq("migapp")
	appName, projName, badApp := uniq("mig"), uniq("migproj"), uniq("migbad")
	for _, ns := range []string{argoNS, appNS} {
		if _, err := bed.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The app's repository needs credentials: Argo CD has them in a
	// repository Secret.
	repoURL, err := bed.authGit.CreateRepo(appName)
	if err != nil {
		t.Fatal(err)
	}
	push(t, newAuthRepo(t, repoURL), guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1"))

	// What Argo CD deployed: applied client-side, with its tracking.
	lastApplied := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"guestbook-ui"}}`
	live := map[string]*unstructured.Unstructured{}
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		kind string
		y    string
		// group/kind of Argo CD's tracking id ("/Kind" for the core group).
		gk string
	}{
		{deploymentGVR, "Deployment", fmt.Sprintf(deploymentYAML, "gcr.io/heptio-images/ks-guestbook-demo:0.1"), "apps/Deployment"},
		{serviceGVR, "Service", serviceYAML, "/Service"},
	} {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(o.y), &m); err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{Object: m}
		u.SetAnnotations(map[string]string{
			"argocd.argoproj.io/tracking-id":                   fmt.Sprintf("%s:%s:%s/guestbook-ui", appName, o.gk, appNS),
			"kubectl.kubernetes.io/last-applied-configuration": lastApplied,
		})
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		live[o.kind] = createYAML(t, dyn, o.gvr, appNS, string(b))
	}

	// Argo CD's own objects.
	argo := []struct {
		gvr  schema.GroupVersionResource
		name string
		y    string
	}{
		{argoProjectGVR, projName, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: %s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: '%s'}]
`, projName, appNS)},
		{argoAppGVR, appName, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: %s
  source: {repoURL: %s, path: guestbook, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
status:
  sync: {status: Synced}
  health: {status: Healthy}
`, appName, projName, repoURL, appNS)},
		{argoAppGVR, badApp, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: %s
  source: {repoURL: %s, path: guestbook, directory: {recurse: true, notAField: 1}}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, badApp, projName, repoURL, appNS)},
	}
	for _, o := range argo {
		createYAML(t, dyn, o.gvr, argoNS, o.y)
	}
	cms := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm"}, Data: map[string]string{
			"application.resourceTrackingMethod": "annotation",
			"url":                                "https://argocd.example.com",
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "argocd-rbac-cm"}, Data: map[string]string{
			"policy.csv":     "g, platform, role:admin\n",
			"policy.default": "role:readonly",
		}},
		// Notifications: a webhook whose token is in the secret, and a
		// service Windlass does not have.
		{ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-cm"}, Data: map[string]string{
			"service.webhook.deploys":  "url: https://hooks.example.com/deploy\nbearerToken: $deploys-token\n",
			"service.pagerduty":        "serviceKeys:\n  ops: $pd-key\n",
			"template.migrated":        "message: '{{.app.metadata.name}} synced'\n",
			"trigger.on-migrated-sync": "- when: app.status.operationState.phase in ['Succeeded']\n  send: [migrated]\n",
		}},
	}
	// The shared server's notifications settings are put back afterwards.
	var savedNotify api.NotificationsView
	if code := call(t, http.MethodGet, "/api/v1/settings/notifications", nil, &savedNotify); code != http.StatusOK {
		t.Fatalf("GET notifications settings: %d", code)
	}
	t.Cleanup(func() {
		// t.Context() has ended by now.
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPut, "/api/v1/settings/notifications", api.NotificationsConfig{Config: savedNotify.Config}},
			{http.MethodPatch, "/api/v1/settings/notifications/secret", map[string]any{"data": map[string]any{"deploys-token": nil}}},
		} {
			b, _ := json.Marshal(r.body)
			req, _ := http.NewRequestWithContext(context.Background(), r.method, bed.api.URL+r.path, bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+bed.token)
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("put back the notifications settings: %s %s: %v %v", r.method, r.path, err, resp)
			} else {
				resp.Body.Close()
			}
		}
	})
	for _, cm := range cms {
		if _, err := bed.kube.CoreV1().ConfigMaps(argoNS).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "repo-guestbook", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
			StringData: map[string]string{"url": repoURL, "username": "deploy", "password": bed.secret}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster-in", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"name": "in-cluster", "server": appspec.InClusterServer}},
		{ObjectMeta: metav1.ObjectMeta{Name: "mystery", Labels: map[string]string{"argocd.argoproj.io/secret-type": "bogus"}},
			StringData: map[string]string{"url": "https://example.com"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-secret"}, StringData: map[string]string{"deploys-token": bed.secret}},
	}
	for _, s := range secrets {
		if _, err := bed.kube.CoreV1().Secrets(argoNS).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A running application controller.
	controller := createYAML(t, dyn, deploymentGVR, argoNS, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-application-controller
  labels: {app.kubernetes.io/name: argocd-application-controller}
spec:
  replicas: 1
  selector: {matchLabels: {app: argocd-application-controller}}
  template:
    metadata: {labels: {app: argocd-application-controller}}
    spec:
      containers: [{name: c, image: quay.io/argoproj/argocd:v3.0.0}]
`)
	// The migration looks for controllers in every namespace: never leave
	// one running for the next test.
	t.Cleanup(func() {
		_ = bed.kube.AppsV1().Deployments(argoNS).Delete(context.Background(), controller.GetName(), metav1.DeleteOptions{})
	})

	versions := func() map[string]string {
		out := map[string]string{}
		for _, o := range argo {
			u, err := dyn.Resource(o.gvr).Namespace(argoNS).Get(t.Context(), o.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out[o.gvr.Resource+"/"+o.name] = u.GetResourceVersion()
		}
		for _, cm := range cms {
			got, err := bed.kube.CoreV1().ConfigMaps(argoNS).Get(t.Context(), cm.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out["configmaps/"+cm.Name] = got.ResourceVersion
		}
		for _, s := range secrets {
			got, err := bed.kube.CoreV1().Secrets(argoNS).Get(t.Context(), s.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out["secrets/"+s.Name] = got.ResourceVersion
		}
		return out
	}
	before := versions()

	if _, stderr, code := cli(bed.adminPassword+"\n", "login", "--server", bed.api.URL, "--username", "admin", "--password-stdin"); code != 0 {
		t.Fatalf("login: exit %d: %s", code, stderr)
	}
	outDir := filepath.Join(t.TempDir(), "out")
	migrate := func(extra ...string) (string, string, int) {
		return cli("", append([]string{"migrate", "argocd", "--kubeconfig", bed.env.Cluster.Kubeconfig, "--namespace", argoNS, "--out", outDir}, extra...)...)
	}
	appExists := func() bool {
		return call(t, http.MethodGet, "/api/v1/applications/"+appName+"?project="+projName, nil, nil) == http.StatusOK
	}

	// The dry run plans, and writes nothing.
	stdout, stderr, code := migrate("--dry-run")
	t.Logf("dry run:\n%s", stdout)
	if code != 1 || !strings.Contains(stderr, "would be refused") {
		t.Fatalf("dry run: exit %d, want 1 for the refused rows: %s", code, stderr)
	}
	for _, want := range []string{
		"Deployment   argocd-application-controller",
		"refuse     Argo CD's application controller runs (replicas: 1)",
		"AppProject   " + projName,
		"Application  " + appName,
		"Application  " + badApp,
		"spec.source.directory.notAField: unknown field",
		`unknown secret-type "bogus"`,
		"in-cluster is built into Windlass",
	} {
		if !containsLoose(stdout, want) {
			t.Errorf("dry run plan lacks %q", want)
		}
	}
	if strings.Contains(stdout+stderr, bed.secret) {
		t.Fatal("the plan shows the repository's password")
	}
	if appExists() || call(t, http.MethodGet, "/api/v1/projects/"+projName, nil, nil) != http.StatusNotFound ||
		call(t, http.MethodGet, "/api/v1/repositories/"+url.PathEscape(repoURL), nil, nil) != http.StatusNotFound {
		t.Fatal("the dry run created the app, its project or its repository")
	}
	if _, err := os.Stat(outDir); !os.IsNotExist(err) {
		t.Fatalf("the dry run wrote %s: %v", outDir, err)
	}

	// The controller runs: the real run refuses to start.
	if _, stderr, code := migrate(); code != 1 || !strings.Contains(stderr, "application controller of Argo CD runs") {
		t.Fatalf("run with the controller up: exit %d, want 1 and the reason: %s", code, stderr)
	}
	if appExists() {
		t.Fatal("the refused run created the app")
	}

	// Scaled to 0 (as step 1 of the switch-over), the run migrates.
	if _, err := bed.kube.AppsV1().Deployments(argoNS).Patch(t.Context(), controller.GetName(), types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = migrate()
	t.Logf("run:\n%s", stdout)
	if code != 1 || !strings.Contains(stderr, "3 objects refused or failed") {
		t.Fatalf("run: exit %d, want 1 for the 3 refused rows: %s", code, stderr)
	}
	for _, want := range []string{"AppProject   " + projName + " create", "Application  " + appName + " create", "Repository   repo-guestbook create",
		"Notifications argocd-notifications-cm service.pagerduty refuse the pagerduty service is not supported",
		"NotificationsSecret argocd-notifications-secret create keys deploys-token"} {
		if !containsLoose(stdout, want) {
			t.Errorf("run plan lacks %q", want)
		}
	}
	var view workflows.AppView
	if code := call(t, http.MethodGet, "/api/v1/applications/"+appName+"?project="+projName, nil, &view); code != http.StatusOK {
		t.Fatalf("migrated app: status %d", code)
	}
	if got := view.Spec.Annotations["windlass.dev/argocd-tracking"]; got != "annotation" {
		t.Errorf("migrated app's tracking annotation = %q, want annotation", got)
	}
	if call(t, http.MethodGet, "/api/v1/projects/"+projName, nil, nil) != http.StatusOK {
		t.Error("migrated project missing")
	}
	if code := call(t, http.MethodGet, "/api/v1/repositories/"+url.PathEscape(repoURL), nil, nil); code != http.StatusOK {
		t.Errorf("migrated repository: status %d", code)
	}
	if _, err := os.Stat(filepath.Join(outDir, "auth-config.yaml")); err != nil {
		t.Errorf("auth config not written: %v", err)
	}
	// The notifications settings have the webhook, its trigger and the
	// key of its token.
	var notify api.NotificationsView
	if code := call(t, http.MethodGet, "/api/v1/settings/notifications", nil, &notify); code != http.StatusOK ||
		!slices.Contains(notify.Triggers, "on-migrated-sync") || !slices.Contains(notify.Templates, "migrated") ||
		!slices.Contains(notify.Services, api.NotificationService{Name: "deploys", Type: "webhook"}) {
		t.Errorf("notifications settings after the run: %d %+v", code, notify)
	}
	var keys api.NotificationsSecretView
	if code := call(t, http.MethodGet, "/api/v1/settings/notifications/secret", nil, &keys); code != http.StatusOK || !slices.Contains(keys.Keys, "deploys-token") {
		t.Errorf("notifications secret keys after the run: %d %v", code, keys.Keys)
	}

	// A second run changes nothing; -o json gives the rows.
	stdout, _, _ = migrate("-o", "json")
	var plan struct {
		Rows []struct{ Kind, Name, Action, Reason string } `json:"rows"`
	}
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("second run -o json: %v\n%s", err, stdout)
	}
	actions := map[string]string{}
	for _, r := range plan.Rows {
		actions[r.Kind+" "+r.Name] = r.Action
	}
	for _, row := range []string{"Application " + appName, "AppProject " + projName, "Repository repo-guestbook", "RBAC argocd-rbac-cm",
		"Notifications argocd-notifications-cm", "NotificationsSecret argocd-notifications-secret"} {
		if actions[row] != "unchanged" {
			t.Errorf("second run: %s is %q, want unchanged (rows %v)", row, actions[row], actions)
		}
	}

	// Argo CD's objects were only read.
	if d := cmp.Diff(before, versions()); d != "" {
		t.Errorf("Argo CD's objects changed (-before +after):\n%s", d)
	}

	// The first sync recreates nothing Argo CD deployed.
	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+appName+"/sync?project="+projName, nil, &res); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("first sync: status %d, result %+v", code, res)
	}
	for kind, u := range live {
		gvr := map[string]schema.GroupVersionResource{"Deployment": deploymentGVR, "Service": serviceGVR}[kind]
		now, err := dyn.Resource(gvr).Namespace(appNS).Get(t.Context(), u.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if now.GetUID() != u.GetUID() {
			t.Errorf("%s %s was recreated: UID %s, was %s", kind, u.GetName(), now.GetUID(), u.GetUID())
		}
		if id := now.GetAnnotations()[manifest.TrackingAnnotation]; !strings.Contains(id, appName) {
			t.Errorf("%s %s after the first sync: tracking %q, want Windlass's for %s", kind, u.GetName(), id, appName)
		}
	}

	// The repository's password went from the Secret to the API only.
	logs, err := os.ReadFile(bed.logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(logs, []byte(bed.secret)) {
		t.Fatal("the repository secret is in the logs")
	}
	scanHistories(t, bed.temporal, [][]byte{[]byte(bed.secret)}, func(_ int, where string) {
		t.Fatalf("the repository secret is in the history of %s", where)
	})
}

// containsLoose reports whether s contains want, with any run of white
// space matching any other (table columns are padded).
func containsLoose(s, want string) bool {
	return strings.Contains(strings.Join(strings.Fields(s), " "), strings.Join(strings.Fields(want), " "))
}
