package frontdoor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// fakeApps keeps apps in memory, as the API would: the default project
// only, every app Synced and Healthy once applied.
type fakeApps struct {
	mu       sync.Mutex
	apps     map[appRef]workflows.AppView
	projects map[string]appspec.Project
	applied  []string
	deleted  []string
	// awaiting makes deletes wait for approval of these resources.
	awaiting []appspec.ResourceKey
	// syncs are the sync requests received, as "<app> <request JSON>".
	syncs []string
}

func newFakeApps() *fakeApps {
	return &fakeApps{apps: map[appRef]workflows.AppView{}, projects: map[string]appspec.Project{}}
}

func (f *fakeApps) ApplyProject(_ context.Context, p appspec.Project) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.Name == "readonly" {
		return &api.Problem{Status: http.StatusConflict, Detail: "project readonly is defined in the projects file"}
	}
	f.projects[p.Name] = p
	f.applied = append(f.applied, "project "+p.Name)
	return nil
}

func (f *fakeApps) DeleteProject(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.projects[name]; !ok {
		return &api.Problem{Status: http.StatusNotFound, Detail: "project not found"}
	}
	for r := range f.apps {
		if r.project == name {
			return &api.Problem{Status: http.StatusConflict, Detail: "project " + name + " still has applications"}
		}
	}
	delete(f.projects, name)
	f.deleted = append(f.deleted, "project "+name)
	return nil
}

func (f *fakeApps) Project(_ context.Context, name string) (appspec.Project, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.projects[name]
	if !ok && name == appspec.DefaultProject {
		return appspec.Project{Name: name}, nil
	}
	if !ok {
		return p, &api.Problem{Status: http.StatusNotFound, Detail: "project not found"}
	}
	return p, nil
}

func (f *fakeApps) ApplyApplication(_ context.Context, spec appspec.Application) (workflows.AppView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.projects[spec.Project]; !ok && spec.Project != appspec.DefaultProject {
		return workflows.AppView{}, &api.Problem{Status: http.StatusForbidden, Detail: "project " + spec.Project + " does not exist", Field: "project"}
	}
	v := workflows.AppView{Spec: spec, Status: workflows.AppStatus{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy, SHA: "c0ffee"}}
	f.apps[appRef{spec.Project, spec.Name}] = v
	f.applied = append(f.applied, spec.Name+"@"+spec.Source.Path)
	return v, nil
}

// MoveApplication moves the app, keeping its status, as the app workflow
// hands its state over; an unknown project refuses it.
func (f *fakeApps) MoveApplication(_ context.Context, from string, spec appspec.Application, _ string) (workflows.AppView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.apps[appRef{from, spec.Name}]
	if !ok {
		return v, &api.Problem{Status: http.StatusNotFound, Detail: "application not found"}
	}
	if _, ok := f.projects[spec.Project]; !ok && spec.Project != appspec.DefaultProject {
		return workflows.AppView{}, &api.Problem{Status: http.StatusForbidden, Detail: "project " + spec.Project + " does not exist", Field: "project"}
	}
	delete(f.apps, appRef{from, spec.Name})
	v.Spec = spec
	f.apps[appRef{spec.Project, spec.Name}] = v
	f.applied = append(f.applied, "move "+spec.Name+" "+from+"->"+spec.Project)
	return v, nil
}

// SyncApplication records the request; an app with an operation refuses
// it, as the app workflow does.
func (f *fakeApps) SyncApplication(_ context.Context, project, name string, req workflows.SyncRequest) (workflows.SyncAccepted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.apps[appRef{project, name}]
	switch {
	case !ok:
		return workflows.SyncAccepted{}, &api.Problem{Status: http.StatusNotFound, Detail: "application not found"}
	case v.Status.Operation != nil:
		return workflows.SyncAccepted{}, &api.Problem{Status: http.StatusConflict, Detail: "another operation is in progress"}
	}
	b, _ := json.Marshal(req)
	f.syncs = append(f.syncs, name+" "+string(b))
	return workflows.SyncAccepted{ID: fmt.Sprintf("sync/%s/%s/%d", project, name, len(f.syncs))}, nil
}

// setOperation marks an app's operation as running (or not).
func (f *fakeApps) setOperation(project, name string, running bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.apps[appRef{project, name}]
	v.Status.Operation = nil
	if running {
		v.Status.Operation = &workflows.Operation{SyncID: "sync/x", Phase: workflows.PhaseRunning}
	}
	f.apps[appRef{project, name}] = v
}

func (f *fakeApps) syncCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.syncs)
}

func (f *fakeApps) DeleteApplication(_ context.Context, project, name, cascade, _ string) (workflows.DeleteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.apps[appRef{project, name}]; !ok {
		return workflows.DeleteResult{}, &api.Problem{Status: http.StatusNotFound, Detail: "application not found"}
	}
	v := f.apps[appRef{project, name}]
	if len(v.Status.AwaitingDeletionApproval) > 0 {
		return workflows.DeleteResult{}, &api.Problem{Status: http.StatusConflict, Detail: "the application is already being deleted"}
	}
	if f.awaiting != nil {
		v.Status.AwaitingDeletionApproval = f.awaiting
		f.apps[appRef{project, name}] = v
		return workflows.DeleteResult{AwaitingApproval: f.awaiting}, nil
	}
	delete(f.apps, appRef{project, name})
	f.deleted = append(f.deleted, name+":"+cascade)
	return workflows.DeleteResult{}, nil
}

func (f *fakeApps) Application(_ context.Context, project, name string) (workflows.AppView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.apps[appRef{project, name}]
	if !ok {
		return v, &api.Problem{Status: http.StatusNotFound, Detail: "application not found"}
	}
	return v, nil
}

func (f *fakeApps) ApplicationNames(context.Context) ([][2]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][2]string
	for r := range f.apps {
		out = append(out, [2]string{r.project, r.name})
	}
	return out, nil
}

func (f *fakeApps) calls() (applied, deleted []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied), slices.Clone(f.deleted)
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// start makes namespaces and runs a controller of them until the test
// ends.
func start(t *testing.T, apps Apps, nss ...string) *running {
	t.Helper()
	return startOf(t, Applications, AppProjects, apps, nss...)
}

// patchCounter counts the PATCH requests it carries.
type patchCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (p patchCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch {
		p.n.Add(1)
	}
	return p.next.RoundTrip(r)
}

// running is a controller under test and the count of its patches.
type running struct {
	c       *Controller
	patches *atomic.Int64
}

// settle waits until n more status passes were queued and the queue is
// empty: what n passes would do is done, or being done by a worker.
func (r *running) settle(t *testing.T, n int64) {
	t.Helper()
	want := r.c.passes.Load() + n
	eventually(t, fmt.Sprintf("%d status passes", n), func() (bool, string) {
		return r.c.passes.Load() >= want && r.c.queue.Len() == 0, fmt.Sprintf("%d passes, %d queued", r.c.passes.Load(), r.c.queue.Len())
	})
}

// startOf is start for the resources res and projects.
func startOf(t *testing.T, res, projects schema.GroupVersionResource, apps Apps, nss ...string) *running {
	t.Helper()
	patches := &atomic.Int64{}
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return patchCounter{next: rt, n: patches} })
	cdyn, err := dynamic.NewForConfig(counted)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := dyn.Resource(namespaces).Create(t.Context(), u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = dyn.Resource(namespaces).Delete(context.Background(), ns, metav1.DeleteOptions{})
		})
	}
	c, err := New(cdyn, apps, Config{Namespaces: nss, StatusEvery: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), resource: res, projects: projects})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &running{c: c, patches: patches}
}

func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e9) }

// application is an Argo CD Application of the default project; extra
// is more YAML under metadata (indented by two spaces).
func application(ns, name, path, metadata string) *unstructured.Unstructured {
	doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
%s
spec:
  project: default
  source: {repoURL: 'https://git.example.com/apps.git', path: %s, targetRevision: main}
  destination: {server: 'https://kubernetes.default.svc', namespace: %s}
`, name, ns, metadata, path, ns)
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func create(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := dyn.Resource(Applications).Namespace(u.GetNamespace()).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, ns, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, err := dyn.Resource(Applications).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

// eventually polls cond until it holds, or fails the test after 20 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statusOf is a resource's status fields: sync, health and the
// conditions as "type: message".
func statusOf(u *unstructured.Unstructured) (sync, health string, conds []string) {
	sync, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
	health, _, _ = unstructured.NestedString(u.Object, "status", "health", "status")
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range list {
		m, _ := c.(map[string]any)
		conds = append(conds, fmt.Sprintf("%v: %v", m["type"], m["message"]))
	}
	return sync, health, conds
}

func waitStatus(t *testing.T, ns, name, wantSync, wantHealth, wantCond string) *unstructured.Unstructured {
	t.Helper()
	var out *unstructured.Unstructured
	eventually(t, fmt.Sprintf("%s/%s status %s/%s %q", ns, name, wantSync, wantHealth, wantCond), func() (bool, string) {
		u, ok := get(t, ns, name)
		if !ok {
			return false, "no resource"
		}
		s, h, conds := statusOf(u)
		out = u
		condOK := wantCond == "" && len(conds) == 0 || wantCond != "" && len(conds) == 1 && strings.Contains(conds[0], wantCond)
		return s == wantSync && h == wantHealth && condOK, fmt.Sprintf("%s/%s %q", s, h, conds)
	})
	return out
}

func TestApplyAndStatus(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-apply")
	r := start(t, apps, ns)
	create(t, application(ns, "guestbook", "guestbook", ""))
	u := waitStatus(t, ns, "guestbook", "Synced", "Healthy", "")
	if rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision"); rev != "c0ffee" {
		t.Fatalf("status.sync.revision = %q, want c0ffee", rev)
	}
	v, err := apps.Application(t.Context(), "default", "guestbook")
	if err != nil || v.Spec.Annotations[DeclaredBy] != ns+"/guestbook" || v.Spec.Source.Path != "guestbook" {
		t.Fatalf("app = %+v, %v; want guestbook declared by %s/guestbook", v.Spec, err, ns)
	}

	// An unchanged resource is neither applied again nor rewritten.
	n := r.patches.Load()
	r.settle(t, 3)
	if d := r.patches.Load() - n; d != 0 {
		t.Fatalf("the status of an unchanged app was written %d more times", d)
	}
	if applied, _ := apps.calls(); len(applied) != 1 {
		t.Fatalf("applied %v, want once", applied)
	}

	// A change of spec is applied.
	u.Object["spec"].(map[string]any)["source"].(map[string]any)["path"] = "guestbook-v2"
	if _, err := dyn.Resource(Applications).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new path applied", func() (bool, string) {
		applied, _ := apps.calls()
		return slices.Equal(applied, []string{"guestbook@guestbook", "guestbook@guestbook-v2"}), fmt.Sprint(applied)
	})
	// The front door writes status only: the spec and metadata are as
	// the user left them.
	u, _ = get(t, ns, "guestbook")
	if p, _, _ := unstructured.NestedString(u.Object, "spec", "source", "path"); p != "guestbook-v2" || len(u.GetFinalizers()) != 0 || len(u.GetAnnotations()) != 0 {
		t.Fatalf("resource changed: path %q, finalizers %v, annotations %v", p, u.GetFinalizers(), u.GetAnnotations())
	}
}

func TestInvalidSpecThenFixed(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-invalid")
	start(t, apps, ns)
	bad := application(ns, "broken", "x", "")
	unstructured.RemoveNestedField(bad.Object, "spec", "source")
	bad.Object["spec"].(map[string]any)["destination"].(map[string]any)["bogus"] = "yes"
	create(t, bad)
	u := waitStatus(t, ns, "broken", "Unknown", "Unknown", "InvalidSpecError: spec.destination.bogus")
	if applied, _ := apps.calls(); len(applied) != 0 {
		t.Fatalf("an invalid resource was applied: %v", applied)
	}

	// Fixed, it is applied and the condition goes.
	fixed := application(ns, "broken", "x", "")
	u.Object["spec"] = fixed.Object["spec"]
	if _, err := dyn.Resource(Applications).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ns, "broken", "Synced", "Healthy", "")
}

func TestProjectRefused(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-project")
	start(t, apps, ns)
	u := application(ns, "elsewhere", "x", "")
	u.Object["spec"].(map[string]any)["project"] = "nope"
	create(t, u)
	waitStatus(t, ns, "elsewhere", "Unknown", "Unknown", "InvalidSpecError: project nope does not exist")
	if _, err := apps.Application(t.Context(), "nope", "elsewhere"); err == nil {
		t.Fatal("an app of a refused project exists")
	}
}

// A changed spec.project moves the app the resource declared (its state
// goes with it) instead of creating a second app; a project that does
// not exist refuses the move and the app stays.
func TestProjectChangeMoves(t *testing.T) {
	apps := newFakeApps()
	apps.projects["team"] = appspec.Project{Name: "team"}
	ns := uniq("fd-move")
	start(t, apps, ns)
	create(t, application(ns, "mover", "x", ""))
	u := waitStatus(t, ns, "mover", "Synced", "Healthy", "")
	u.Object["spec"].(map[string]any)["project"] = "nope"
	if _, err := dyn.Resource(Applications).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u = waitStatus(t, ns, "mover", "Synced", "Healthy", "InvalidSpecError: project nope does not exist")
	u.Object["spec"].(map[string]any)["project"] = "team"
	if _, err := dyn.Resource(Applications).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ns, "mover", "Synced", "Healthy", "")
	eventually(t, "the app moved", func() (bool, string) {
		_, errOld := apps.Application(t.Context(), "default", "mover")
		_, errNew := apps.Application(t.Context(), "team", "mover")
		return errOld != nil && errNew == nil, fmt.Sprint(errOld, errNew)
	})
	applied, _ := apps.calls()
	if want := []string{"mover@x", "move mover default->team"}; !slices.Equal(applied, want) {
		t.Fatalf("applied %v, want %v", applied, want)
	}
}

func TestDeleteWithFinalizer(t *testing.T) {
	for _, tc := range []struct{ finalizer, cascade string }{
		{finalizer, "foreground"},
		{finalizer + "/foreground", "foreground"},
		{finalizer + "/background", "background"},
	} {
		t.Run(tc.cascade+" "+tc.finalizer, func(t *testing.T) {
			apps := newFakeApps()
			ns := uniq("fd-final")
			start(t, apps, ns)
			create(t, application(ns, "gb", "gb", "  finalizers: ["+tc.finalizer+"]"))
			waitStatus(t, ns, "gb", "Synced", "Healthy", "")
			if err := dyn.Resource(Applications).Namespace(ns).Delete(t.Context(), "gb", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the resource gone", func() (bool, string) {
				u, ok := get(t, ns, "gb")
				if !ok {
					return true, ""
				}
				return false, fmt.Sprint("finalizers ", u.GetFinalizers())
			})
			if _, deleted := apps.calls(); !slices.Equal(deleted, []string{"gb:" + tc.cascade}) {
				t.Fatalf("deleted %v, want gb with cascade %s", deleted, tc.cascade)
			}
		})
	}
}

func TestDeleteWithoutFinalizerKeepsResources(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-orphan")
	start(t, apps, ns)
	create(t, application(ns, "gb", "gb", ""))
	waitStatus(t, ns, "gb", "Synced", "Healthy", "")
	if err := dyn.Resource(Applications).Namespace(ns).Delete(t.Context(), "gb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the app removed, its resources orphaned", func() (bool, string) {
		_, deleted := apps.calls()
		return slices.Equal(deleted, []string{"gb:orphan"}), fmt.Sprint(deleted)
	})
}

func TestDeletionAwaitingApproval(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-await")
	r := start(t, apps, ns)
	create(t, application(ns, "gb", "gb", "  finalizers: ["+finalizer+"]"))
	waitStatus(t, ns, "gb", "Synced", "Healthy", "")
	apps.mu.Lock()
	apps.awaiting = []appspec.ResourceKey{{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"}}
	apps.mu.Unlock()
	if err := dyn.Resource(Applications).Namespace(ns).Delete(t.Context(), "gb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ns, "gb", "Synced", "Healthy", "DeletionError: the deletion waits for the approval to delete /PersistentVolumeClaim:"+ns+"/data")
	r.settle(t, 3)
	if u, _ := get(t, ns, "gb"); u == nil || !slices.Contains(u.GetFinalizers(), finalizer) {
		t.Fatalf("finalizer released before the deletion: %v", u)
	}
	if _, deleted := apps.calls(); len(deleted) != 0 {
		t.Fatalf("deleted %v before the approval", deleted)
	}
}

func TestSameAppFromTwoNamespaces(t *testing.T) {
	apps := newFakeApps()
	a, b := uniq("fd-a"), uniq("fd-b")
	start(t, apps, a, b)
	create(t, application(a, "shared", "a", ""))
	waitStatus(t, a, "shared", "Synced", "Healthy", "")
	create(t, application(b, "shared", "b", "  finalizers: ["+finalizer+"]"))
	waitStatus(t, b, "shared", "Unknown", "Unknown", "InvalidSpecError: application default/shared is declared by the Application "+a+"/shared")

	// Deleting the refused resource leaves the other's app alone.
	if err := dyn.Resource(Applications).Namespace(b).Delete(t.Context(), "shared", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refused resource gone", func() (bool, string) {
		_, ok := get(t, b, "shared")
		return !ok, "still there"
	})
	applied, deleted := apps.calls()
	if !slices.Equal(applied, []string{"shared@a"}) || len(deleted) != 0 {
		t.Fatalf("applied %v, deleted %v; want shared@a applied and nothing deleted", applied, deleted)
	}
}

// A CRD whose schema prunes status fields, with a status subresource:
// the status goes through the subresource, and what the schema keeps is
// not written again and again.
func TestStatusOfAStricterCRD(t *testing.T) {
	strict := schema.GroupVersionResource{Group: "frontdoor.test.windlass.dev", Version: "v1", Resource: "stricts"}
	apps := newFakeApps()
	ns := uniq("fd-strict")
	run := startOf(t, strict, AppProjects, apps, ns)
	u := application(ns, "gb", "gb", "")
	u.SetAPIVersion("frontdoor.test.windlass.dev/v1")
	u.SetKind("Strict")
	r := dyn.Resource(strict).Namespace(ns)
	if _, err := r.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "status.sync.status Synced", func() (bool, string) {
		u, err := r.Get(t.Context(), "gb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		return s == "Synced", fmt.Sprint(u.Object["status"])
	})
	n := run.patches.Load()
	run.settle(t, 3)
	if d := run.patches.Load() - n; d != 0 {
		t.Fatalf("the status was written %d more times", d)
	}
	u, err := r.Get(t.Context(), "gb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"sync": map[string]any{"status": "Synced"}}, u.Object["status"]); d != "" {
		t.Fatalf("stored status (-want +got):\n%s", d)
	}
}

func appProject(ns, name, spec string) *unstructured.Unstructured {
	var m map[string]any
	doc := fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: %s, namespace: %s}\nspec: %s\n", name, ns, spec)
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestAppProjects(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-proj")
	r := start(t, apps, ns)
	projects := dyn.Resource(AppProjects).Namespace(ns)
	if _, err := projects.Create(t.Context(), appProject(ns, "team-x", "{sourceRepos: ['*'], destinations: [{server: '*', namespace: '*'}]}"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "project team-x applied", func() (bool, string) {
		p, err := apps.Project(t.Context(), "team-x")
		return err == nil && p.Annotations[DeclaredBy] == ns+"/team-x" && len(p.SourceRepos) == 1, fmt.Sprint(p, err)
	})
	u := application(ns, "in-x", "x", "")
	u.Object["spec"].(map[string]any)["project"] = "team-x"
	create(t, u)
	waitStatus(t, ns, "in-x", "Synced", "Healthy", "")

	// A bad project says why; so does one the server refuses.
	for name, spec := range map[string]string{"bad": "{sourceRepos: ['*'], bogus: 1}", "readonly": "{sourceRepos: ['*']}"} {
		if _, err := projects.Create(t.Context(), appProject(ns, name, spec), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"bad": "InvalidSpecError: spec.bogus", "readonly": "InvalidSpecError: project readonly is defined in the projects file"} {
		eventually(t, "condition on "+name, func() (bool, string) {
			p, err := projects.Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			_, _, conds := statusOf(p)
			return len(conds) == 1 && strings.Contains(conds[0], want), fmt.Sprint(conds)
		})
	}
	if p, _ := projects.Get(t.Context(), "team-x", metav1.GetOptions{}); p.Object["status"] != nil {
		t.Fatalf("a valid project got a status: %v", p.Object["status"])
	}

	// Deleted while an app uses it, the project stays until the app goes.
	if err := projects.Delete(t.Context(), "team-x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.settle(t, 2)
	if _, err := apps.Project(t.Context(), "team-x"); err != nil {
		t.Fatalf("project deleted under its app: %v", err)
	}
	if err := dyn.Resource(Applications).Namespace(ns).Delete(t.Context(), "in-x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "project team-x deleted after its app", func() (bool, string) {
		_, deleted := apps.calls()
		return slices.Equal(deleted, []string{"in-x:orphan", "project team-x"}), fmt.Sprint(deleted)
	})
}

// Without AppProjects in the cluster, Applications are still watched.
func TestWithoutAppProjects(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-noproj")
	startOf(t, Applications, schema.GroupVersionResource{Group: "nothing.windlass.dev", Version: "v1", Resource: "nothings"}, apps, ns)
	create(t, application(ns, "gb", "gb", ""))
	waitStatus(t, ns, "gb", "Synced", "Healthy", "")
}

// Apps whose resource went while no front door ran are removed (their
// resources stay); others are left alone.
func TestSweepOfAppsWhoseResourceWent(t *testing.T) {
	apps := newFakeApps()
	ns, other := uniq("fd-sweep"), uniq("fd-unwatched")
	for name, by := range map[string]string{"ghost": ns + "/ghost", "kept": ns + "/kept", "elsewhere": other + "/elsewhere", "api": ""} {
		spec := appspec.Application{Name: name, Project: appspec.DefaultProject}
		if by != "" {
			spec.Annotations = map[string]string{DeclaredBy: by}
		}
		apps.apps[appRef{appspec.DefaultProject, name}] = workflows.AppView{Spec: spec}
	}
	created := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := dyn.Resource(namespaces).Create(t.Context(), created, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, application(ns, "kept", "kept", ""))
	r := start(t, apps, ns)
	eventually(t, "ghost removed", func() (bool, string) {
		_, deleted := apps.calls()
		return slices.Equal(deleted, []string{"ghost:orphan"}), fmt.Sprint(deleted)
	})
	r.settle(t, 2)
	if _, deleted := apps.calls(); len(deleted) != 1 {
		t.Fatalf("deleted %v, want ghost only", deleted)
	}
}

// setOperationField writes an Application's operation, as `argocd app
// sync` or `kubectl patch` would.
func setOperationField(t *testing.T, ns, name, op string) {
	t.Helper()
	patch := fmt.Sprintf(`{"operation": %s}`, op)
	if _, err := dyn.Resource(Applications).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// An operation on the resource starts a sync with its fields, once, and
// is removed; one Windlass cannot run is refused in a SyncError
// condition; one that arrives while a sync runs waits for it.
func TestOperationSync(t *testing.T) {
	apps := newFakeApps()
	ns := uniq("fd-op")
	start(t, apps, ns)
	create(t, application(ns, "guestbook", "guestbook", ""))
	waitStatus(t, ns, "guestbook", "Synced", "Healthy", "")

	setOperationField(t, ns, "guestbook", `{"initiatedBy": {"username": "alice"}, "sync": {"revision": "v2", "prune": true, "syncStrategy": {"apply": {}}, "resources": [{"group": "apps", "kind": "Deployment", "name": "web"}]}}`)
	want := `guestbook {"revision":"v2","prune":true,"resources":[{"group":"apps","kind":"Deployment","name":"web"}],"strategy":"apply","initiator":"alice"}`
	eventually(t, "one sync with the operation's fields, and the operation removed", func() (bool, string) {
		u, _ := get(t, ns, "guestbook")
		_, has := u.Object["operation"]
		return slices.Equal(apps.syncCalls(), []string{want}) && !has, fmt.Sprintf("syncs %q, operation present %v", apps.syncCalls(), has)
	})

	setOperationField(t, ns, "guestbook", `{"sync": {"revisions": ["a", "b"]}}`)
	waitStatus(t, ns, "guestbook", "Synced", "Healthy", "SyncError: operation.sync.revisions: not supported")
	if u, _ := get(t, ns, "guestbook"); u.Object["operation"] != nil || len(apps.syncCalls()) != 1 {
		t.Fatalf("refused operation: still there %v, syncs %q", u.Object["operation"], apps.syncCalls())
	}

	apps.setOperation("default", "guestbook", true)
	setOperationField(t, ns, "guestbook", `{"sync": {}}`)
	time.Sleep(time.Second)
	if u, _ := get(t, ns, "guestbook"); u.Object["operation"] == nil || len(apps.syncCalls()) != 1 {
		t.Fatalf("operation during a sync: removed (%v) or run (syncs %q)", u.Object["operation"] == nil, apps.syncCalls())
	}
	apps.setOperation("default", "guestbook", false)
	eventually(t, "the waiting operation run once the sync ended", func() (bool, string) {
		u, _ := get(t, ns, "guestbook")
		return len(apps.syncCalls()) == 2 && u.Object["operation"] == nil, fmt.Sprintf("syncs %q", apps.syncCalls())
	})
	waitStatus(t, ns, "guestbook", "Synced", "Healthy", "")
	if got := apps.syncCalls()[1]; got != `guestbook {"initiator":"kubernetes:`+ns+`/guestbook"}` {
		t.Fatalf("second sync = %s", got)
	}
}
