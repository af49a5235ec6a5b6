package appsets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// fakeApps holds running apps by "<project>/<name>" and records writes.
type fakeApps struct {
	mu   sync.Mutex // Upsert and Delete run concurrently
	apps map[string]appspec.Application
	// refuse fails the upsert of this app ("<project>/<name>").
	refuse string
	// hold makes each write wait for it; inFlight and most count the
	// writes waiting.
	hold           chan struct{}
	inFlight, most int
	writes         []string
	// linger keeps a deleted app running for that many more reads.
	linger int
	dying  map[string]int
}

func (f *fakeApps) Spec(_ context.Context, project, name string) (appspec.Application, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := project + "/" + name
	if n, ok := f.dying[id]; ok {
		if n > 0 {
			f.dying[id] = n - 1
			f.writes = append(f.writes, "still there "+id)
			return f.apps[id], true, nil
		}
		delete(f.dying, id)
		delete(f.apps, id)
	}
	a, ok := f.apps[id]
	return a, ok, nil
}

func (f *fakeApps) Owned(_ context.Context, owner string) ([]string, error) {
	var out []string
	for id, a := range f.apps {
		if a.ManagedBy != nil && a.ManagedBy.App == owner {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (f *fakeApps) Upsert(_ context.Context, spec appspec.Application) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id := spec.Project + "/" + spec.Name; id == f.refuse {
		return errors.New("update timed out")
	}
	f.wait()
	f.writes = append(f.writes, "upsert "+spec.Project+"/"+spec.Name)
	f.apps[spec.Project+"/"+spec.Name] = spec
	return nil
}

func (f *fakeApps) Delete(_ context.Context, project, name, cascade, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wait()
	f.writes = append(f.writes, "delete "+project+"/"+name+" "+cascade)
	if f.linger > 0 {
		if f.dying == nil {
			f.dying = map[string]int{}
		}
		f.dying[project+"/"+name] = f.linger
		return nil
	}
	delete(f.apps, project+"/"+name)
	return nil
}

type fakeProjects struct{}

func (fakeProjects) Project(_ context.Context, name string) (appspec.Project, error) {
	if name != appspec.DefaultProject {
		return appspec.Project{}, errors.New("not found")
	}
	return appspec.DefaultProjectSpec(), nil
}

// listSet is a set of a list generator over names.
func listSet(t *testing.T, policy string, preserve bool, names ...string) appset.ApplicationSet {
	t.Helper()
	var elems []string
	for _, n := range names {
		elems = append(elems, fmt.Sprintf("{name: %s}", n))
	}
	y := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  generators:
  - list: {elements: [%s]}
  syncPolicy: {applicationsSync: %q, preserveResourcesOnDeletion: %t}
  template:
    metadata: {name: '{{name}}'}
    spec:
      project: default
      source: {repoURL: 'https://git.example/r.git', path: '{{name}}', targetRevision: HEAD}
      destination: {server: 'https://kubernetes.default.svc', namespace: '{{name}}'}
`, strings.Join(elems, ", "), policy, preserve)
	set, err := appset.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// run runs Reconcile as an activity.
func run(t *testing.T, a *Activities, in ReconcileInput) ReconcileOutput {
	t.Helper()
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	a.Register(env)
	v, err := env.ExecuteActivity(ReconcileName, in)
	if err != nil {
		t.Fatal(err)
	}
	var out ReconcileOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReconcilePolicies(t *testing.T) {
	tests := []struct {
		policy   string
		preserve bool
		// After a, b, c exist: the set yields b (changed path), c, d.
		wantWrites []string
		wantApps   []string
	}{
		{appset.PolicySync, false, []string{"upsert default/b", "upsert default/d", "delete default/a foreground"}, []string{"default/b", "default/c", "default/d"}},
		{appset.PolicySync, true, []string{"upsert default/b", "upsert default/d", "delete default/a orphan"}, []string{"default/b", "default/c", "default/d"}},
		{appset.PolicyCreateOnly, false, []string{"upsert default/d"}, []string{"default/a", "default/b", "default/c", "default/d"}},
		{appset.PolicyCreateUpdate, false, []string{"upsert default/b", "upsert default/d"}, []string{"default/a", "default/b", "default/c", "default/d"}},
		{appset.PolicyCreateDelete, false, []string{"upsert default/d", "delete default/a foreground"}, []string{"default/b", "default/c", "default/d"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s preserve=%t", tc.policy, tc.preserve), func(t *testing.T) {
			apps := &fakeApps{apps: map[string]appspec.Application{}}
			a, err := New(appset.New(nil, nil, nil), apps, fakeProjects{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			first := run(t, a, ReconcileInput{Set: listSet(t, tc.policy, tc.preserve, "a", "b", "c")})
			if diff := cmp.Diff([]string{"default/a", "default/b", "default/c"}, first.Created); diff != "" {
				t.Fatalf("created (-want +got):\n%s", diff)
			}
			apps.writes = nil
			// b's source path changes by hand; the set puts it back
			// where it may update.
			b := apps.apps["default/b"]
			b.Source.Path = "elsewhere"
			apps.apps["default/b"] = b
			out := run(t, a, ReconcileInput{Set: listSet(t, tc.policy, tc.preserve, "b", "c", "d"), Owned: first.Apps})
			if diff := cmp.Diff(tc.wantWrites, writesSorted(apps.writes)); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantApps, out.Apps); diff != "" {
				t.Errorf("apps (-want +got):\n%s", diff)
			}
			if out.Error != "" {
				t.Errorf("error %q", out.Error)
			}
		})
	}
}

func TestReconcileBadInputWritesNothing(t *testing.T) {
	foreign := appspec.Application{Name: "b", Project: "default"}
	tests := []struct {
		name     string
		set      func(t *testing.T) appset.ApplicationSet
		existing map[string]appspec.Application
		gen      Generator
		wantKind string
		wantErr  string
	}{
		{"invalid app name", func(t *testing.T) appset.ApplicationSet { return listSet(t, "", false, "Bad_Name") }, nil, nil, ErrKindInvalid, "Bad_Name"},
		{"duplicate app", func(t *testing.T) appset.ApplicationSet { return listSet(t, "", false, "a", "a") }, nil, nil, ErrKindDuplicate, "both yield app"},
		{"over the limit", func(t *testing.T) appset.ApplicationSet { return listSet(t, "", false, "a", "b", "c") }, nil,
			appset.New(nil, nil, nil, appset.WithLimit(2)), ErrKindTooMany, "more than"},
		{"app of another owner", func(t *testing.T) appset.ApplicationSet { return listSet(t, "", false, "a", "b") },
			map[string]appspec.Application{"default/b": foreign}, nil, ErrKindConflict, "managed by the API"},
		{"source failed", func(t *testing.T) appset.ApplicationSet { return listSet(t, "", false, "a") }, nil,
			failingGenerator{fmt.Errorf("%w: plugin p: context deadline exceeded", appset.ErrSource)}, ErrKindSource, "deadline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			apps := &fakeApps{apps: map[string]appspec.Application{}}
			for k, v := range tc.existing {
				apps.apps[k] = v
			}
			gen := tc.gen
			if gen == nil {
				gen = appset.New(nil, nil, nil)
			}
			a, err := New(gen, apps, fakeProjects{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := run(t, a, ReconcileInput{Set: tc.set(t), Owned: []string{"default/x"}})
			if out.ErrorKind != tc.wantKind || !strings.Contains(out.Error, tc.wantErr) {
				t.Errorf("error %s %q, want %s containing %q", out.ErrorKind, out.Error, tc.wantKind, tc.wantErr)
			}
			if len(apps.writes) > 0 {
				t.Errorf("wrote %v", apps.writes)
			}
			if diff := cmp.Diff([]string{"default/x"}, out.Apps); diff != "" {
				t.Errorf("apps kept in the status (-want +got):\n%s", diff)
			}
		})
	}
}

type failingGenerator struct{ err error }

func (f failingGenerator) Generate(context.Context, appset.ApplicationSet) ([]appset.App, error) {
	return nil, f.err
}

func TestIgnoreApplicationDifferences(t *testing.T) {
	apps := &fakeApps{apps: map[string]appspec.Application{}}
	a, err := New(appset.New(nil, nil, nil), apps, fakeProjects{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set := listSet(t, "", false, "a", "b")
	first := run(t, a, ReconcileInput{Set: set})
	for _, id := range first.Apps {
		app := apps.apps[id]
		app.Source.TargetRevision = "v2"
		apps.apps[id] = app
	}
	set.Spec.IgnoreApplicationDifferences = []appset.IgnoreDifference{{Name: "a", JSONPointers: []string{"/spec/source/targetRevision"}}}
	apps.writes = nil
	run(t, a, ReconcileInput{Set: set, Owned: first.Apps})
	if diff := cmp.Diff([]string{"upsert default/b"}, apps.writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if got := apps.apps["default/a"].Source.TargetRevision; got != "v2" {
		t.Errorf("a's ignored targetRevision = %q, want v2 kept", got)
	}
	if got := apps.apps["default/b"].Source.TargetRevision; got != "HEAD" {
		t.Errorf("b's targetRevision = %q, want HEAD", got)
	}
	// The same through jq: b's edit is kept too, and nothing is written.
	b := apps.apps["default/b"]
	b.Source.TargetRevision = "v3"
	apps.apps["default/b"] = b
	set.Spec.IgnoreApplicationDifferences = []appset.IgnoreDifference{{JQPathExpressions: []string{".spec.source.targetRevision"}}}
	apps.writes = nil
	out := run(t, a, ReconcileInput{Set: set, Owned: first.Apps})
	if out.Error != "" || len(apps.writes) > 0 {
		t.Errorf("jq: error %q, writes %v", out.Error, apps.writes)
	}
	// A bad expression writes nothing and names the field.
	set.Spec.IgnoreApplicationDifferences = []appset.IgnoreDifference{{JQPathExpressions: []string{".spec.source | ("}}}
	out = run(t, a, ReconcileInput{Set: set, Owned: first.Apps})
	if !strings.Contains(out.Error, "spec.ignoreApplicationDifferences[0].jqPathExpressions[0]") || out.ErrorKind != ErrKindInvalid || len(apps.writes) > 0 {
		t.Errorf("bad jq: %s %q, writes %v", out.ErrorKind, out.Error, apps.writes)
	}
}

// Each jq path form Argo CD's docs use, and each bad expression, over a
// live app with edits and the set's desired app.
func TestPreserveJQ(t *testing.T) {
	live := appspec.Application{Name: "a", Project: "default", Labels: map[string]string{"team": "x", "keep": "me"},
		Sources: []appspec.Source{
			{RepoURL: "https://git.example/app.git", Path: "app", TargetRevision: "hotfix", Helm: &appspec.Helm{Values: "replicas: 5"}},
			{RepoURL: "https://git.example/values.git", TargetRevision: "v9", Ref: "values"},
		},
		SyncPolicy: &appspec.SyncPolicy{Automated: &appspec.Automated{Prune: true}}}
	desired := appspec.Application{Name: "a", Project: "default", Labels: map[string]string{"team": "y"},
		Sources: []appspec.Source{
			{RepoURL: "https://git.example/app.git", Path: "app", TargetRevision: "main", Helm: &appspec.Helm{Values: "replicas: 1"}},
			{RepoURL: "https://git.example/values.git", TargetRevision: "main", Ref: "values"},
		}}
	tests := []struct {
		name, expr string
		want       func(a *appspec.Application)
		wantErr    string
	}{
		{name: "a field", expr: ".spec.sources[0].helm.values", want: func(a *appspec.Application) { a.Sources[0].Helm.Values = "replicas: 5" }},
		{name: "every element", expr: ".spec.sources[].targetRevision", want: func(a *appspec.Application) {
			a.Sources[0].TargetRevision, a.Sources[1].TargetRevision = "hotfix", "v9"
		}},
		{name: "selected element", expr: `.spec.sources[] | select(.repoURL | contains("values")) | .targetRevision`,
			want: func(a *appspec.Application) { a.Sources[1].TargetRevision = "v9" }},
		{name: "live only", expr: ".spec.syncPolicy.automated", want: func(a *appspec.Application) {
			a.SyncPolicy = &appspec.SyncPolicy{Automated: &appspec.Automated{Prune: true}}
		}},
		{name: "a label", expr: `.metadata.labels.keep`, want: func(a *appspec.Application) { a.Labels["keep"] = "me" }},
		{name: "selects nothing", expr: ".spec.info", want: func(*appspec.Application) {}},
		{name: "syntax", expr: ".spec.sources[", wantErr: "jqPathExpressions[0]"},
		{name: "not a path", expr: ".spec.sources | length", wantErr: "invalid path against"},
		{name: "the name", expr: ".metadata.name", wantErr: ".metadata.name: only .spec..., .metadata.labels and .metadata.annotations can be ignored"},
		{name: "runaway", expr: ".spec.info | repeat(.x)", wantErr: "selects more than 10000 paths"},
		{name: "the whole spec", expr: ".spec", wantErr: ".spec: only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := ignoredPointers([]appset.IgnoreDifference{{JQPathExpressions: []string{tc.expr}}})
			var got appspec.Application
			if err == nil {
				got, err = preserve(t.Context(), live, clone(t, desired), rules, nil)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := clone(t, desired)
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("preserved (-want +got):\n%s", diff)
			}
		})
	}
}

func clone(t *testing.T, a appspec.Application) appspec.Application {
	t.Helper()
	var out appspec.Application
	if err := remarshal(a, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDeleteApps(t *testing.T) {
	apps := &fakeApps{apps: map[string]appspec.Application{
		"default/mine":  {Name: "mine", Project: "default", ManagedBy: &appspec.ManagedBy{App: Owner("s"), Cascade: "foreground"}},
		"default/kept":  {Name: "kept", Project: "default", ManagedBy: &appspec.ManagedBy{App: Owner("s")}},
		"default/other": {Name: "other", Project: "default", ManagedBy: &appspec.ManagedBy{App: Owner("t")}},
		"default/api":   {Name: "api", Project: "default"},
	}}
	a, err := New(appset.New(nil, nil, nil), apps, fakeProjects{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	a.Register(env)
	v, err := env.ExecuteActivity(DeleteAppsName, DeleteAppsInput{Set: "s", Owned: []string{"default/api", "default/other"}})
	if err != nil {
		t.Fatal(err)
	}
	var out DeleteAppsOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"delete default/kept orphan", "delete default/mine foreground"}, writesSorted(apps.writes)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// A RollingSync set's apps have no automated sync, whatever the template
// says; the same template without a strategy keeps it.
func TestRollingSyncTurnsOffAutomatedSync(t *testing.T) {
	const y = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  generators: [{list: {elements: [{name: a, env: dev}]}}]
  %s
  template:
    metadata: {name: '{{name}}', labels: {env: '{{env}}'}}
    spec:
      project: default
      source: {repoURL: 'https://git.example/r.git', path: '{{name}}', targetRevision: HEAD}
      destination: {server: 'https://kubernetes.default.svc', namespace: '{{name}}'}
      syncPolicy: {automated: {prune: true, selfHeal: true}, syncOptions: [CreateNamespace=true]}
`
	for _, tc := range []struct {
		name, strategy string
		automated      bool
	}{
		{name: "rolling sync", strategy: `strategy: {type: RollingSync, rollingSync: {steps: [{matchExpressions: [{key: env, operator: In, values: [dev]}]}]}}`},
		{name: "all at once", strategy: `strategy: {type: AllAtOnce}`, automated: true},
		{name: "no strategy", automated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := appset.Parse(fmt.Appendf(nil, y, tc.strategy))
			if err != nil {
				t.Fatal(err)
			}
			apps := &fakeApps{apps: map[string]appspec.Application{}}
			a, err := New(appset.New(nil, nil, nil), apps, fakeProjects{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			run(t, a, ReconcileInput{Set: set})
			got := apps.apps["default/a"]
			if got.IsAutomated() != tc.automated {
				t.Errorf("automated %t, want %t", got.IsAutomated(), tc.automated)
			}
			if got.SyncPolicy == nil || !slices.Equal(got.SyncPolicy.SyncOptions, []string{"CreateNamespace=true"}) {
				t.Errorf("sync options lost: %+v", got.SyncPolicy)
			}
		})
	}
}

// An exact deletion (one group of a Reverse deletion) deletes only the
// apps named and answers once each has gone.
func TestDeleteAppsExactWaitsUntilGone(t *testing.T) {
	mine := func(name string) appspec.Application {
		return appspec.Application{Name: name, Project: "default", ManagedBy: &appspec.ManagedBy{App: Owner("s"), Cascade: "foreground"}}
	}
	apps := &fakeApps{linger: 1, apps: map[string]appspec.Application{
		"default/prod-1": mine("prod-1"), "default/prod-2": mine("prod-2"), "default/dev": mine("dev"),
	}}
	a, err := New(appset.New(nil, nil, nil), apps, fakeProjects{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	a.Register(env)
	v, err := env.ExecuteActivity(DeleteAppsName, DeleteAppsInput{Set: "s", Owned: []string{"default/prod-2", "default/prod-1"}, Exact: true, Group: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out DeleteAppsOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	want := []string{"delete default/prod-1 foreground", "delete default/prod-2 foreground",
		"still there default/prod-1", "still there default/prod-2"}
	if diff := cmp.Diff(want, writesSorted(apps.writes)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if _, ok := apps.apps["default/dev"]; !ok || len(apps.dying) > 0 {
		t.Errorf("after the group: apps %v, dying %v", apps.apps, apps.dying)
	}
}

// writesSorted sorts each run of upserts and each run of deletes in
// writes: a pass writes its apps concurrently, in no set order.
func writesSorted(writes []string) []string {
	out := slices.Clone(writes)
	verb := func(w string) string { v, _, _ := strings.Cut(w, " "); return v }
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && verb(out[j]) == verb(out[i]) {
			j++
		}
		if v := verb(out[i]); v == "upsert" || v == "delete" {
			slices.Sort(out[i:j])
		}
		i = j
	}
	return out
}

// wait, with f.mu held, waits for hold, counting the writes waiting.
func (f *fakeApps) wait() {
	if f.hold == nil {
		return
	}
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	f.mu.Unlock()
	<-f.hold
	f.mu.Lock()
	f.inFlight--
}

// A pass creates, and deletes, several apps at once.
func TestReconcileWritesConcurrently(t *testing.T) {
	apps := &fakeApps{apps: map[string]appspec.Application{}, hold: make(chan struct{})}
	a, err := New(appset.New(nil, nil, nil), apps, fakeProjects{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Let the writes go once three wait together, or after 10 s: one
	// at a time, three never wait together.
	release := func() {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			apps.mu.Lock()
			n := apps.inFlight
			apps.mu.Unlock()
			if n >= 3 {
				break
			}
		}
		close(apps.hold)
	}
	go release()
	first := run(t, a, ReconcileInput{Set: listSet(t, appset.PolicySync, false, "a", "b", "c", "d")})
	if apps.most < 3 {
		t.Errorf("at most %d creates at once, want at least 3", apps.most)
	}
	apps.hold, apps.most = make(chan struct{}), 0
	go release()
	out := run(t, a, ReconcileInput{Set: listSet(t, appset.PolicySync, false, "d"), Owned: first.Apps})
	if diff := cmp.Diff([]string{"default/a", "default/b", "default/c"}, out.Deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if apps.most < 3 {
		t.Errorf("at most %d deletes at once, want at least 3", apps.most)
	}
}
