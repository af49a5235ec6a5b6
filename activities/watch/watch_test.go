package watch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	workflowservice "go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/internal/syncbuf"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// fakeTemporal records refresh signals about objects in namespace ns;
// other packages' tests change tracked objects on the shared cluster too.
type fakeTemporal struct {
	ns      string
	mu      sync.Mutex
	signals []string
}

func (f *fakeTemporal) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := arg.(RefreshRequest)
	if !strings.Contains(r.Reason, " "+f.ns+"/") {
		return nil
	}
	kind := ""
	if r.Drift {
		kind = " [drift]"
	}
	f.signals = append(f.signals, id+" "+name+" "+r.Reason+kind)
	return nil
}

func (f *fakeTemporal) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	return &workflowservice.ListWorkflowExecutionsResponse{}, nil
}

func (f *fakeTemporal) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.signals...)
}

// A change by another field manager to a tracked object is drift and
// signals its app once (debounced); Windlass's own apply is not drift.
func TestWatchSignalsDrift(t *testing.T) {
	env, cs, ns := watchBed(t)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": ns}, "data": map[string]any{"k": "v"}}}
	manifest.SetTracking("default", "web", cm)
	clients := kube.NewFactory(env.Cluster.Config, kube.Options{})
	c, err := clients.For("in-cluster")
	if err != nil {
		t.Fatal(err)
	}
	cmRes := c.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	if _, err := cmRes.Apply(t.Context(), "cfg", cm, metav1.ApplyOptions{FieldManager: "windlass", Force: true}); err != nil {
		t.Fatal(err)
	}
	// An object with the app's tracking annotation but without its label
	// is not watched (compares do not list it either).
	unlabelled := cm.DeepCopy()
	unlabelled.SetName("cfg-unlabelled")
	unlabelled.SetLabels(nil)
	if _, err := cmRes.Apply(t.Context(), "cfg-unlabelled", unlabelled, metav1.ApplyOptions{FieldManager: "windlass", Force: true}); err != nil {
		t.Fatal(err)
	}
	ft := &fakeTemporal{ns: ns}
	a, err := New(clients, ft, "default", "windlass", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	var ts testsuite.WorkflowTestSuite
	aenv := ts.NewTestActivityEnvironment()
	aenv.RegisterActivityWithOptions(a.Watch, activityOpts(WatchName))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	aenv.SetTestTimeout(time.Minute)
	done := make(chan error, 1)
	go func() {
		_, err := aenv.ExecuteActivity(WatchName, Input{Server: "in-cluster", Kinds: []GroupKind{{Kind: "ConfigMap"}}, DebounceMillis: 100, HeartbeatMillis: 200})
		done <- err
	}()
	_ = ctx
	time.Sleep(0) // the informer starts in the activity; wait on conditions below
	// Windlass re-applies with a change: not drift.
	waitFor(t, func() bool { return true })
	cm.Object["data"] = map[string]any{"k": "v2"}
	if _, err := cmRes.Apply(t.Context(), "cfg", cm, metav1.ApplyOptions{FieldManager: "windlass", Force: true}); err != nil {
		t.Fatal(err)
	}
	// Someone else edits it: drift.
	// The informer starts inside the activity: edit until it notices.
	n := 0
	waitFor(t, func() bool {
		if len(ft.got()) > 0 {
			return true
		}
		n++
		for _, name := range []string{"cfg-unlabelled", "cfg"} {
			live, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			live.Data["k"] = fmt.Sprintf("edited-%d", n)
			if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), live, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	if got := ft.got(); len(got) != 1 || got[0] != "app/default/web refresh drift: ConfigMap "+ns+"/cfg changed [drift]" {
		t.Fatalf("signals = %q", got)
	}

	// Objects created with an app's tracking: by Windlass (app own), not
	// drift; by another writer with an annotation copied from another
	// object (app copy), not the app's; by another writer for app web, a
	// refresh that lists (not a drift compare, which reads only the
	// objects the app knows).
	create := func(name, app, manager string, mutate func(*unstructured.Unstructured)) {
		t.Helper()
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "v"}}}
		manifest.SetTracking("default", app, o)
		if mutate != nil {
			mutate(o)
		}
		if _, err := cmRes.Create(t.Context(), o, metav1.CreateOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	create("cfg-own", "own", "windlass", nil)
	create("cfg-copy", "copy", "kubectl-create", func(o *unstructured.Unstructured) {
		o.SetAnnotations(map[string]string{manifest.TrackingAnnotation: manifest.TrackingID("default", "copy", cm)})
	})
	create("cfg-extra", "web", "kubectl-create", nil)
	want := "app/default/web refresh drift: ConfigMap " + ns + "/cfg-extra created"
	waitFor(t, func() bool { return slices.Contains(ft.got(), want) })
	// The informer handled the two creations before this one; their
	// signals, had they been sent, went out on goroutines of their own.
	time.Sleep(500 * time.Millisecond)
	for _, s := range ft.got() {
		if strings.Contains(s, "app/default/own ") || strings.Contains(s, "app/default/copy ") {
			t.Errorf("signal %q: not a creation by another writer for that app", s)
		}
	}
	_ = autoscalingv1.Scale{}
}

// watchBed returns the shared test bed, a clientset of it and a new
// namespace, deleted after the test.
func watchBed(t *testing.T) (*testbed.Env, kubernetes.Interface, string) {
	t.Helper()
	env, cleanup, err := testbed.Shared(t.Context(), "watch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	cs, err := kubernetes.NewForConfig(env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "watch-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return env, cs, ns
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func activityOpts(name string) activity.RegisterOptions { return activity.RegisterOptions{Name: name} }

// The informers keep a slim copy of each object: what drift detection
// reads, with the rest as a digest that changes with the desired part
// only.
func TestSlimKeepsWhatDriftReads(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "5", "generation": int64(2),
				"labels":        map[string]any{manifest.AppLabel: "default.web", "tier": "front"},
				"managedFields": []any{map[string]any{"manager": "windlass", "operation": "Apply"}}},
			"spec":   map[string]any{"replicas": int64(1)},
			"status": map[string]any{"readyReplicas": int64(1)}}}
		manifest.SetTracking("default", "web", u)
		return u
	}
	digest := func(u *unstructured.Unstructured) any {
		t.Helper()
		s, err := slim(u)
		if err != nil {
			t.Fatal(err)
		}
		return s.(*unstructured.Unstructured).Object[digestField]
	}
	s, err := slim(base())
	if err != nil {
		t.Fatal(err)
	}
	got := s.(*unstructured.Unstructured)
	if got.GetName() != "web" || got.GetNamespace() != "shop" || got.GetUID() != "u-1" || got.GetResourceVersion() != "5" ||
		len(got.GetManagedFields()) != 1 || manifest.OwnerApp(got) != "default/web" || got.GetKind() != "Deployment" {
		t.Fatalf("slim lost what drift detection reads: %v", got.Object)
	}
	if _, ok := got.Object["spec"]; ok || got.GetLabels() != nil {
		t.Fatalf("slim kept the spec or labels: %v", got.Object)
	}
	for _, tc := range []struct {
		name   string
		change func(u *unstructured.Unstructured)
		same   bool
	}{
		{name: "status only", change: func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"readyReplicas": int64(3)} }, same: true},
		{name: "bookkeeping only", change: func(u *unstructured.Unstructured) { u.SetResourceVersion("9"); u.SetGeneration(3) }, same: true},
		{name: "spec", change: func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"replicas": int64(3)} }},
		{name: "a label", change: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{manifest.AppLabel: "default.web"}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := base()
			tc.change(u)
			if same := digest(base()) == digest(u); same != tc.same {
				t.Fatalf("digest unchanged = %v, want %v", same, tc.same)
			}
		})
	}
	if v, err := slim("not an object"); err != nil || v != "not an object" {
		t.Fatalf("slim of another value = %v, %v", v, err)
	}
}

// Drift detection reads the slim objects' managed fields: a changed field
// set of another writer that took one of Windlass's fields is drift;
// Windlass's own apply and status updates are not. The slim entries keep a digest of each field set, not the set,
// and no status entries.
func TestDriftOnSlimManagedFields(t *testing.T) {
	entry := func(manager, sub string, fields map[string]any) map[string]any {
		e := map[string]any{"manager": manager, "operation": "Update", "time": "2026-11-21T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields}
		if sub != "" {
			e["subresource"] = sub
		}
		return e
	}
	replicas := map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}
	image := map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{}}}}}
	ready := map[string]any{"f:status": map[string]any{"f:readyReplicas": map[string]any{}}}
	object := func(spec int64, entries ...map[string]any) *unstructured.Unstructured {
		mf := make([]any, len(entries))
		for i, e := range entries {
			mf[i] = e
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "managedFields": mf},
			"spec":     map[string]any{"replicas": spec}}}
		s, err := slim(u)
		if err != nil {
			t.Fatal(err)
		}
		return s.(*unstructured.Unstructured)
	}
	windlass, status, edit := entry("windlass", "", image), entry("kube-controller-manager", "status", ready), entry("kubectl-edit", "", replicas)
	before := object(1, windlass, status, edit)
	for _, tc := range []struct {
		name  string
		after *unstructured.Unstructured
		want  string
	}{
		{name: "kubectl scale", after: object(3, windlass, status, edit, entry("kubectl", "scale", replicas)), want: "kubectl"},
		{name: "another writer's field set changed", after: object(3, windlass, status, entry("kubectl-edit", "", image)), want: "kubectl-edit"},
		{name: "windlass's own apply", after: object(3, entry("windlass", "", replicas), status, edit)},
		{name: "status only", after: object(1, windlass, entry("kube-controller-manager", "status", image), edit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := changedWriter(before, tc.after, "windlass"); got != tc.want {
				t.Fatalf("changedWriter = %q, want %q", got, tc.want)
			}
		})
	}
	// Drift also needs a field Windlass applied to change hands: a writer
	// that only adds fields of its own (a controller's annotation) is not
	// drift; on an object Windlass never applied, any writer is.
	revision := map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{"f:deployment.kubernetes.io/revision": map[string]any{}}}}
	both := map[string]any{"f:spec": image["f:spec"], "f:metadata": revision["f:metadata"]}
	applied := entry("windlass", "", both)
	applied["operation"] = "Apply"
	retimed := func(e map[string]any) map[string]any { e["time"] = "2026-11-21T10:05:00Z"; return e }
	a := &Activities{fieldManager: "windlass"}
	for _, tc := range []struct {
		name      string
		from, to  *unstructured.Unstructured
		wantDrift bool
	}{
		{name: "a controller adds an annotation", from: object(1, applied), to: object(2, applied, entry("kube-controller-manager", "", revision))},
		{name: "kubectl edit takes an applied field", from: object(1, applied), to: object(3, entry("windlass", "", revision), entry("kubectl-edit", "", image)), wantDrift: true},
		{name: "a forced apply takes an applied field", from: object(1, applied), to: object(3, entry("windlass", "", revision), entry("helm", "", image)), wantDrift: true},
		{name: "kubectl edit changes a field it took before", from: object(3, entry("windlass", "", revision), entry("kubectl-edit", "", image)),
			to: object(4, entry("windlass", "", revision), retimed(entry("kubectl-edit", "", image))), wantDrift: true},
		{name: "an object Windlass never applied", from: object(1, edit), to: object(3, entry("kubectl-edit", "", image)), wantDrift: true},
		{name: "windlass's own apply", from: object(1, applied), to: object(3, entry("windlass", "", replicas))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.isDrift(tc.from, tc.to); got != tc.wantDrift {
				t.Fatalf("isDrift = %v, want %v", got, tc.wantDrift)
			}
		})
	}
	for _, e := range before.GetManagedFields() {
		if e.Subresource == "status" || e.FieldsV1 == nil || strings.Contains(string(e.FieldsV1.GetRawBytes()), "f:") {
			t.Fatalf("slim entry %+v keeps a status entry or a field set", e)
		}
	}
	if len(before.GetManagedFields()) != 2 {
		t.Fatalf("slim managed fields = %d entries, want 2 (no status entry)", len(before.GetManagedFields()))
	}
	if v, err := slim("not an object"); err != nil || v != "not an object" {
		t.Fatalf("slim of another value = %v, %v", v, err)
	}
}

// A kind the watch may not list (here Secrets, for a user allowed
// ConfigMaps only) does not stall the others: the activity heartbeats
// from the start, logs the kind that fails, and signals drift on the
// kinds it can watch. Before, it waited for every kind to be listed
// and never heartbeat, so its heartbeat timed out while its informers
// went on, and each retry started another set.
func TestWatchHeartbeatsWithAForbiddenKind(t *testing.T) {
	env, cs, ns := watchBed(t)
	user := ns + "-watcher"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
	}}
	if _, err := cs.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	tracked := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": ns}}}
	manifest.SetTracking("default", "limited", tracked)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "cfg", Namespace: ns, Labels: tracked.GetLabels(), Annotations: tracked.GetAnnotations()}, Data: map[string]string{"k": "v"}},
		metav1.CreateOptions{FieldManager: "windlass"}); err != nil {
		t.Fatal(err)
	}

	cfg := rest.CopyConfig(env.Cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	ft := &fakeTemporal{ns: ns}
	var logs syncbuf.Buffer
	a, err := New(kube.NewFactory(cfg, kube.Options{}), ft, "default", "windlass", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		beats []Progress
	)
	var ts testsuite.WorkflowTestSuite
	aenv := ts.NewTestActivityEnvironment()
	aenv.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var p Progress
		if details.Get(&p) == nil {
			mu.Lock()
			beats = append(beats, p)
			mu.Unlock()
		}
	})
	aenv.RegisterActivityWithOptions(a.Watch, activityOpts(WatchName))
	aenv.SetTestTimeout(time.Minute)
	go func() {
		_, _ = aenv.ExecuteActivity(WatchName, Input{Server: "in-cluster", Kinds: []GroupKind{{Kind: "ConfigMap"}, {Kind: "Secret"}}, DebounceMillis: 100, HeartbeatMillis: 100})
	}()
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(beats, func(p Progress) bool { return p.Kinds == 2 })
	})
	waitFor(t, func() bool {
		return strings.Contains(logs.String(), msgKindFailing) && strings.Contains(logs.String(), "resource=secrets")
	})
	// Drift on the kind it can watch is still signalled.
	n := 0
	waitFor(t, func() bool {
		if len(ft.got()) > 0 {
			return true
		}
		n++
		live, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "cfg", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.Data["k"] = "edited-" + strconv.Itoa(n)
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), live, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	if got := ft.got(); !strings.HasPrefix(got[0], "app/default/limited refresh drift: ConfigMap "+ns+"/cfg changed") {
		t.Fatalf("signals = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range beats {
		if b.Synced == 2 {
			t.Fatalf("heartbeat %+v: the forbidden kind counted as listed", b)
		}
	}
	if strings.Contains(logs.String(), msgWatching) {
		t.Fatalf("logged %q with a kind not listed:\n%s", msgWatching, logs.String())
	}
}
