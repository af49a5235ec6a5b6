package children

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// fakeApps holds running apps by "<project>/<name>" and records calls.
type fakeApps struct {
	apps  map[string]workflows.AppView
	calls []string
}

func (f *fakeApps) View(_ context.Context, project, name string) (workflows.AppView, bool, error) {
	v, ok := f.apps[project+"/"+name]
	return v, ok, nil
}

func (f *fakeApps) Find(_ context.Context, name string) ([]string, error) {
	var out []string
	for id := range f.apps {
		if p, n, _ := cut(id); n == name {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeApps) Children(_ context.Context, parent string) ([]string, error) {
	var out []string
	for id, v := range f.apps {
		if v.Spec.ManagedBy != nil && v.Spec.ManagedBy.App == parent {
			out = append(out, id)
		}
	}
	return out, nil
}

func (f *fakeApps) Upsert(_ context.Context, spec appspec.Application) error {
	f.calls = append(f.calls, "upsert "+spec.Project+"/"+spec.Name)
	v := f.apps[spec.Project+"/"+spec.Name]
	v.Spec = spec
	f.apps[spec.Project+"/"+spec.Name] = v
	return nil
}

// Move moves the app's view, as the app workflow hands its state over.
func (f *fakeApps) Move(_ context.Context, from string, spec appspec.Application, _ string) error {
	f.calls = append(f.calls, "move "+from+"/"+spec.Name+" to "+spec.Project)
	v := f.apps[from+"/"+spec.Name]
	delete(f.apps, from+"/"+spec.Name)
	v.Spec = spec
	f.apps[spec.Project+"/"+spec.Name] = v
	return nil
}

func (f *fakeApps) Delete(_ context.Context, project, name, cascade, _ string) error {
	f.calls = append(f.calls, "delete "+project+"/"+name+" "+cascade)
	delete(f.apps, project+"/"+name)
	return nil
}

func (f *fakeApps) Sync(_ context.Context, project, name, _ string) error {
	f.calls = append(f.calls, "sync "+project+"/"+name)
	return nil
}

func (f *fakeApps) Refresh(_ context.Context, project, name, _ string) error {
	f.calls = append(f.calls, "refresh "+project+"/"+name)
	return nil
}

func (f *fakeApps) UsesProject(_ context.Context, project string) (bool, error) {
	for _, v := range f.apps {
		if v.Spec.Project == project {
			return true, nil
		}
	}
	return false, nil
}

type fakeProjects struct {
	projects map[string]appspec.Project
	readOnly map[string]bool
}

var errNoProject = errors.New("project not found")

func (f *fakeProjects) Project(_ context.Context, name string) (appspec.Project, error) {
	p, ok := f.projects[name]
	if !ok {
		return p, errNoProject
	}
	return p, nil
}

func (f *fakeProjects) Projects(context.Context) ([]appspec.Project, error) {
	var out []appspec.Project
	for _, p := range f.projects {
		out = append(out, p)
	}
	return out, nil
}

func (f *fakeProjects) PutProject(_ context.Context, p appspec.Project) error {
	f.projects[p.Name] = p
	return nil
}

func (f *fakeProjects) DeleteProject(_ context.Context, name string) error {
	delete(f.projects, name)
	return nil
}

func (f *fakeProjects) ReadOnly(name string) bool { return f.readOnly[name] }

func app(name, project, ns string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec": map[string]any{"project": project, "source": map[string]any{"repoURL": "https://example.com/r.git", "path": name},
			"destination": map[string]any{"server": appspec.InClusterServer, "namespace": ns}},
	}}
	if len(finalizers) > 0 {
		u.SetFinalizers(finalizers)
	}
	return u
}

func appProject(name string, namespaces ...string) *unstructured.Unstructured {
	var dests []any
	for _, ns := range namespaces {
		dests = append(dests, map[string]any{"server": "*", "namespace": ns})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec":     map[string]any{"sourceRepos": []any{"*"}, "destinations": dests},
	}}
}

// dependent sets the depends-on annotation of a declared app.
func dependent(u *unstructured.Unstructured, deps string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{appspec.AnnotationDependsOn: deps})
	return u
}

func view(project, name, parent string) workflows.AppView {
	v := workflows.AppView{Spec: appspec.Application{Name: name, Project: project}}
	if parent != "" {
		v.Spec.ManagedBy = &appspec.ManagedBy{App: parent}
	}
	return v
}

func fixture() (*Children, *fakeApps, *fakeProjects) {
	apps := &fakeApps{apps: map[string]workflows.AppView{
		"default/root":   view("default", "root", ""),
		"default/mid":    view("default", "mid", "default/root"),
		"default/loose":  view("default", "loose", ""),
		"default/owned":  view("default", "owned", "default/other-parent"),
		"default/mover":  view("default", "mover", "default/mid"),
		"team/elsewhere": view("team", "elsewhere", ""),
		"default/api":    {Spec: appspec.Application{Name: "api", Project: "default", DependsOn: []string{"web"}}},
	}}
	projects := &fakeProjects{projects: map[string]appspec.Project{
		"default": appspec.DefaultProjectSpec(),
		"narrow":  {Name: "narrow", SourceRepos: []string{"*"}, Destinations: []appspec.ProjectDestination{{Server: "*", Namespace: "narrow-*"}}},
		"team":    {Name: "team", SourceRepos: []string{"*"}, Destinations: []appspec.ProjectDestination{{Server: "*", Namespace: "*"}}},
		"theirs":  {Name: "theirs", Annotations: map[string]string{AnnotationManagedBy: "default/other-parent"}},
	}, readOnly: map[string]bool{"fixed": true}}
	c, err := New(apps, projects)
	if err != nil {
		panic(err)
	}
	return c, apps, projects
}

func TestCheck(t *testing.T) {
	mid := cluster.Target{Project: "default", App: "mid"}
	narrowParent := cluster.Target{Project: "narrow", App: "np"}
	invalid := app("bad", "default", "ns")
	_ = unstructured.SetNestedField(invalid.Object, "", "spec", "source", "repoURL")
	for _, tc := range []struct {
		name   string
		parent cluster.Target
		decls  []*unstructured.Unstructured
		want   string // "" for no error; else a part of the message
	}{
		{"new child", mid, []*unstructured.Unstructured{app("leaf", "default", "leaf")}, ""},
		{"adopts an app without a parent", mid, []*unstructured.Unstructured{app("loose", "default", "loose")}, ""},
		{"invalid child names its field", mid, []*unstructured.Unstructured{invalid}, "Application bad: spec.source.repoURL"},
		{"cycle through the grandparent", mid, []*unstructured.Unstructured{app("root", "default", "x")}, "cycle"},
		{"cycle to itself", mid, []*unstructured.Unstructured{app("mid", "default", "x")}, "cycle"},
		{"parent's project forbids the destination", narrowParent, []*unstructured.Unstructured{app("leaf", "default", "wide")},
			"field spec.destination: not permitted by project narrow of parent narrow/np"},
		{"child's project forbids the destination", mid, []*unstructured.Unstructured{app("leaf", "narrow", "wide")},
			"not permitted by its project narrow"},
		{"child's project is missing", mid, []*unstructured.Unstructured{app("leaf", "nowhere", "x")}, "field spec.project: project nowhere does not exist"},
		{"child's project declared alongside", mid, []*unstructured.Unstructured{appProject("fresh", "*"), app("leaf", "fresh", "x")}, ""},
		{"no escalation through a declared project", narrowParent, []*unstructured.Unstructured{appProject("fresh", "*"), app("leaf", "fresh", "wide")},
			"not permitted by project narrow of parent"},
		{"name taken in another project", mid, []*unstructured.Unstructured{app("elsewhere", "default", "x")}, "taken by application team/elsewhere"},
		{"own child moves to another project", mid, []*unstructured.Unstructured{app("mover", "team", "x")}, ""},
		{"own child moves to a project that refuses it", mid, []*unstructured.Unstructured{app("mover", "narrow", "wide")}, "not permitted by its project narrow"},
		{"name owned by another parent", mid, []*unstructured.Unstructured{app("owned", "default", "x")}, "managed by application default/other-parent"},
		{"dependencies without a cycle", mid, []*unstructured.Unstructured{dependent(app("web", "default", "x"), "db"), app("db", "default", "y")}, ""},
		{"dependency cycle among declared apps", mid, []*unstructured.Unstructured{dependent(app("web", "default", "x"), "db"), dependent(app("db", "default", "y"), "web")},
			"Application web: field spec.dependsOn: cycle: web -> db -> web"},
		{"dependency cycle through a saved app", mid, []*unstructured.Unstructured{dependent(app("web", "default", "x"), "api")},
			"Application web: field spec.dependsOn: cycle: web -> api -> web"},
		{"declared twice", mid, []*unstructured.Unstructured{app("leaf", "default", "x"), app("leaf", "default", "y")}, "declared twice"},
		{"project from the projects file", mid, []*unstructured.Unstructured{appProject("fixed", "*")}, "projects file"},
		{"project of another parent", mid, []*unstructured.Unstructured{appProject("theirs", "*")}, "managed by application default/other-parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := fixture()
			err := c.Check(t.Context(), tc.parent, tc.decls)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check: %v, want an error with %q", err, tc.want)
			case tc.want != "" && !errors.Is(err, cluster.ErrDeclaration) && !strings.Contains(tc.want, "projects file"):
				t.Fatalf("Check: %v is not an ErrDeclaration", err)
			}
		})
	}
}

func TestApplyRecordsParent(t *testing.T) {
	c, apps, projects := fixture()
	parent := cluster.Target{Project: "default", App: "root"}
	act, err := c.Apply(t.Context(), parent, app("leaf", "default", "leaf", argoFinalizer+"/background"), false)
	if err != nil || act != cluster.ActionCreated {
		t.Fatalf("Apply = %s, %v", act, err)
	}
	got := apps.apps["default/leaf"].Spec.ManagedBy
	if diff := cmp.Diff(&appspec.ManagedBy{App: "default/root", Cascade: cluster.CascadeBackground}, got); diff != "" {
		t.Fatalf("managedBy (-want +got):\n%s", diff)
	}
	if act, err := c.Apply(t.Context(), parent, app("leaf", "default", "leaf", argoFinalizer+"/background"), false); err != nil || act != cluster.ActionUnchanged {
		t.Fatalf("second Apply = %s, %v, want unchanged", act, err)
	}
	if act, err := c.Apply(t.Context(), parent, appProject("fresh", "*"), false); err != nil || act != cluster.ActionCreated {
		t.Fatalf("Apply project = %s, %v", act, err)
	}
	if projects.projects["fresh"].Annotations[AnnotationManagedBy] != "default/root" {
		t.Fatalf("project annotations = %v", projects.projects["fresh"].Annotations)
	}
	managed, err := c.Managed(t.Context(), parent)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range managed {
		names = append(names, m.Kind+"/"+m.Name)
	}
	if diff := cmp.Diff([]string{"Application/leaf", "Application/mid", "AppProject/fresh"}, sortedApps(names)); diff != "" {
		t.Fatalf("managed (-want +got):\n%s", diff)
	}
}

// A declared app whose spec.project changes in Git is moved, not created
// again in its new project (and the old one left to be deleted).
func TestApplyMovesChangedProject(t *testing.T) {
	c, apps, _ := fixture()
	parent := cluster.Target{Project: "default", App: "mid"}
	act, err := c.Apply(t.Context(), parent, app("mover", "team", "x"), true)
	if err != nil || act != cluster.ActionConfigured || len(apps.calls) != 0 {
		t.Fatalf("dry run Apply = %s, %v, calls %v", act, err, apps.calls)
	}
	act, err = c.Apply(t.Context(), parent, app("mover", "team", "x"), false)
	if err != nil || act != cluster.ActionConfigured {
		t.Fatalf("Apply = %s, %v", act, err)
	}
	if diff := cmp.Diff([]string{"move default/mover to team"}, apps.calls); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	if _, ok := apps.apps["team/mover"]; !ok {
		t.Fatal("the app is not in project team")
	}
	if act, err := c.Apply(t.Context(), parent, app("mover", "team", "x"), false); err != nil || act != cluster.ActionUnchanged {
		t.Fatalf("second Apply = %s, %v, want unchanged", act, err)
	}
}

// sortedApps sorts the apps, keeping the projects after them.
func sortedApps(names []string) []string {
	var apps, projs []string
	for _, n := range names {
		if strings.HasPrefix(n, "Application/") {
			apps = append(apps, n)
		} else {
			projs = append(projs, n)
		}
	}
	slices.Sort(apps)
	return append(apps, projs...)
}

// Deletion follows the finalizer recorded on the child: cascade with it,
// the resources kept without it; a project goes once no app uses it.
func TestDelete(t *testing.T) {
	c, apps, projects := fixture()
	parent := cluster.Target{Project: "default", App: "root"}
	for _, u := range []*unstructured.Unstructured{app("kept", "default", "k"), app("cascaded", "fresh", "c", argoFinalizer), appProject("fresh", "*")} {
		if _, err := c.Apply(t.Context(), parent, u, false); err != nil {
			t.Fatal(err)
		}
	}
	key := func(kind, name string) appspec.ResourceKey {
		return appspec.ResourceKey{Group: cluster.DeclarationGroup, Kind: kind, Name: name}
	}
	if msg, err := c.Delete(t.Context(), parent, key(cluster.KindAppProject, "fresh"), false); err != nil || !strings.Contains(msg, "kept") {
		t.Fatalf("delete of a used project: %q, %v", msg, err)
	}
	if _, err := c.Delete(t.Context(), parent, key(cluster.KindApplication, "kept"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(t.Context(), parent, key(cluster.KindApplication, "cascaded"), false); err != nil {
		t.Fatal(err)
	}
	if msg, err := c.Delete(t.Context(), parent, key(cluster.KindAppProject, "fresh"), false); err != nil || msg != "project deleted" {
		t.Fatalf("delete of an unused project: %q, %v", msg, err)
	}
	want := []string{"upsert default/kept", "upsert fresh/cascaded", "delete default/kept orphan", "delete fresh/cascaded foreground"}
	if diff := cmp.Diff(want, apps.calls); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	if _, ok := projects.projects["fresh"]; ok {
		t.Fatal("project fresh is still there")
	}
	if msg, err := c.Delete(t.Context(), parent, key(cluster.KindApplication, "loose"), false); err != nil || msg != "already gone" {
		t.Fatalf("delete of an app the parent does not manage: %q, %v", msg, err)
	}
}

// A wave's wait reads a child as Healthy only once it has compared the
// declared spec and is Synced and Healthy; it refreshes it once and syncs
// a child without automated sync once.
func TestStateDuringWait(t *testing.T) {
	c, apps, _ := fixture()
	parent := cluster.Target{Project: "default", App: "root"}
	decl := app("leaf", "default", "leaf")
	st, err := c.State(t.Context(), parent, decl, time.Time{})
	if err != nil || st.Health != appspec.HealthMissing || st.Sync != appspec.SyncOutOfSync {
		t.Fatalf("state of a missing child = %+v, %v", st, err)
	}
	if _, err := c.Apply(t.Context(), parent, decl, false); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v := apps.apps["default/leaf"]
	v.Status = workflows.AppStatus{Sync: appspec.SyncOutOfSync, Health: appspec.HealthHealthy, ReconciledAt: since.Add(-time.Minute)}
	apps.apps["default/leaf"] = v
	if st, _ := c.State(t.Context(), parent, decl, since); st.Health != appspec.HealthProgressing || st.Sync != appspec.SyncSynced {
		t.Fatalf("state before the child compared = %+v", st)
	}
	v.Status.ReconciledAt = since.Add(time.Second)
	apps.apps["default/leaf"] = v
	for range 2 {
		if st, _ := c.State(t.Context(), parent, decl, since); st.Health != appspec.HealthProgressing {
			t.Fatalf("state of an out-of-sync child = %+v", st)
		}
	}
	v.Status.Sync = appspec.SyncSynced
	apps.apps["default/leaf"] = v
	if st, _ := c.State(t.Context(), parent, decl, since); st.Health != appspec.HealthHealthy {
		t.Fatalf("state of a synced, healthy child = %+v", st)
	}
	want := []string{"upsert default/leaf", "refresh default/leaf", "sync default/leaf"}
	if diff := cmp.Diff(want, apps.calls); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	v.Status.Operation = &workflows.Operation{Phase: workflows.PhaseRunning}
	apps.apps["default/leaf"] = v
	if st, _ := c.State(t.Context(), parent, decl, time.Time{}); st.Health != appspec.HealthProgressing {
		t.Fatalf("state of a syncing child = %+v", st)
	}
}

// A parent's compare never queries the parent itself (it may run inside
// the parent's workflow task): an app that declares itself is Degraded.
func TestStateOfSelf(t *testing.T) {
	c, apps, _ := fixture()
	st, err := c.State(t.Context(), cluster.Target{Project: "default", App: "root"}, app("root", "default", "x"), time.Time{})
	if err != nil || st.Health != appspec.HealthDegraded || !strings.Contains(st.Message, "cycle") {
		t.Fatalf("state of self = %+v, %v", st, err)
	}
	if len(apps.calls) != 0 {
		t.Fatalf("calls %v, want none", apps.calls)
	}
}

// A declared refresh annotation, which the child drops once it has
// refreshed, does not make the child differ from its declaration.
func TestRefreshAnnotationIgnored(t *testing.T) {
	c, apps, _ := fixture()
	parent := cluster.Target{Project: "default", App: "root"}
	u := app("leaf", "default", "leaf")
	u.SetAnnotations(map[string]string{appspec.AnnotationRefresh: "hard", "team": "a"})
	if act, err := c.Apply(t.Context(), parent, u, false); err != nil || act != cluster.ActionCreated {
		t.Fatalf("Apply = %s, %v", act, err)
	}
	v := apps.apps["default/leaf"]
	delete(v.Spec.Annotations, appspec.AnnotationRefresh) // as the app does after refreshing
	apps.apps["default/leaf"] = v
	if act, err := c.Apply(t.Context(), parent, u, false); err != nil || act != cluster.ActionUnchanged {
		t.Fatalf("second Apply = %s, %v, want unchanged", act, err)
	}
	st, err := c.State(t.Context(), parent, u, time.Time{})
	if err != nil || st.Sync != appspec.SyncSynced {
		t.Fatalf("State = %+v, %v, want Synced", st, err)
	}
	u.SetAnnotations(map[string]string{appspec.AnnotationRefresh: "hard", "team": "b"})
	if act, err := c.Apply(t.Context(), parent, u, false); err != nil || act != cluster.ActionConfigured {
		t.Fatalf("changed Apply = %s, %v, want configured", act, err)
	}
	if got := apps.apps["default/leaf"].Spec.Annotations[appspec.AnnotationRefresh]; got != "hard" {
		t.Fatalf("upserted refresh annotation = %q, want hard", got)
	}
}
