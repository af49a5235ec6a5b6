package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// fakeSteps answers the steps and records which ran.
type fakeSteps struct {
	project    appspec.Project
	projectErr error
	shas       map[string]string // repo URL -> SHA; absent: an error
	cached     map[string]bool   // first source's SHA -> the cache holds the request
	quick      map[string]bool   // first source's SHA -> RenderQuick renders it
	compareErr error
	// other makes the cache answer with the manifests of another request.
	other bool
	calls []string
}

func (f *fakeSteps) Cached(_ context.Context, req render.Request) (render.ManifestRef, bool) {
	sha := req.Sources[0].SHA
	f.calls = append(f.calls, "cached "+sha)
	if !f.cached[sha] {
		return render.ManifestRef{}, false
	}
	if f.other {
		req.AppName = "other"
	}
	return render.ManifestRef{Key: req.Key(), SHA: sha, Count: 3, Request: req}, true
}

func (f *fakeSteps) RenderQuick(_ context.Context, req render.Request) (render.ManifestRef, bool) {
	sha := req.Sources[0].SHA
	f.calls = append(f.calls, "quick "+sha)
	if !f.quick[sha] {
		return render.ManifestRef{}, false
	}
	return render.ManifestRef{Key: req.Key(), SHA: sha, Count: 3, Request: req}, true
}

func (f *fakeSteps) Get(_ context.Context, in project.GetInput) (appspec.Project, error) {
	f.calls = append(f.calls, "project "+in.Name)
	return f.project, f.projectErr
}

func (f *fakeSteps) ResolveRevision(_ context.Context, in source.ResolveInput) (source.ResolveOutput, error) {
	f.calls = append(f.calls, "resolve "+in.RepoURL)
	sha, ok := f.shas[in.RepoURL]
	if !ok {
		return source.ResolveOutput{}, errors.New("connection refused")
	}
	return source.ResolveOutput{SHA: sha, Ref: "refs/heads/main"}, nil
}

func (f *fakeSteps) Compare(_ context.Context, in cluster.CompareInput) (cluster.CompareOutput, error) {
	f.calls = append(f.calls, "compare "+in.Manifests.SHA)
	if f.compareErr != nil {
		return cluster.CompareOutput{}, f.compareErr
	}
	return cluster.CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}, nil
}

func TestQuickPass(t *testing.T) {
	const (
		repoA, repoB = "https://git.test/a.git", "https://git.test/b.git"
		shaA, shaB   = "aaaa", "bbbb"
	)
	srcA, srcB := appspec.Source{RepoURL: repoA, Path: ".", TargetRevision: "main"}, appspec.Source{RepoURL: repoB, Path: ".", TargetRevision: "main"}
	app := appspec.Application{Name: "web", Project: "default", Sources: []appspec.Source{srcA, srcB},
		Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "web"}}.Defaulted()
	chartApp := app
	chartApp.Sources = []appspec.Source{{RepoURL: "https://charts.test", Chart: "web", TargetRevision: "1.0.0"}}
	open := appspec.DefaultProjectSpec()
	closed := open
	closed.SourceRepos = []string{"https://git.test/other.git"}
	at := func(a, b string) []render.SourceRequest {
		return []render.SourceRequest{{Source: srcA, SHA: a}, {Source: srcB, SHA: b}}
	}
	ref := func(a, b string) *render.ManifestRef {
		req := Request(app, at(a, b), &open)
		return &render.ManifestRef{Key: req.Key(), SHA: a, Count: 3, Request: req}
	}
	synced := &cluster.CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}
	shas := map[string]string{repoA: shaA, repoB: shaB}
	moved := map[string]string{repoA: shaA, repoB: "cccc"}
	resolves := []string{"project default", "resolve " + repoA, "resolve " + repoB}
	calls := func(more ...string) []string { return append(append([]string{}, resolves...), more...) }

	for _, tc := range []struct {
		name      string
		steps     fakeSteps
		in        QuickInput
		want      Pass
		wantCalls []string
	}{
		{
			name:      "nothing moved: the last manifests, compared",
			steps:     fakeSteps{project: open, shas: shas},
			in:        QuickInput{Input: Input{App: app, Last: ref(shaA, shaB)}, Compare: true},
			want:      Pass{Next: StepDone, Project: &open, Revision: "main", Sources: at(shaA, shaB), Manifests: ref(shaA, shaB), Compare: synced},
			wantCalls: calls("compare " + shaA),
		},
		{
			name:      "a source moved, the cache holds the new request: its ref, compared",
			steps:     fakeSteps{project: open, shas: moved, cached: map[string]bool{shaA: true}},
			in:        QuickInput{Input: Input{App: app, Last: ref(shaA, shaB)}, Compare: true},
			want:      Pass{Next: StepDone, Project: &open, Revision: "main", Sources: at(shaA, "cccc"), Manifests: ref(shaA, "cccc"), Compare: synced},
			wantCalls: calls("cached "+shaA, "compare "+shaA),
		},
		{
			name:      "the first pass, the cache holds the request: its ref, compared",
			steps:     fakeSteps{project: open, shas: shas, cached: map[string]bool{shaA: true}},
			in:        QuickInput{Input: Input{App: app}, Compare: true},
			want:      Pass{Next: StepDone, Project: &open, Revision: "main", Sources: at(shaA, shaB), Manifests: ref(shaA, shaB), Compare: synced},
			wantCalls: calls("cached "+shaA, "compare "+shaA),
		},
		{
			name:      "a source moved, the cache does not hold the new request: stops at the render",
			steps:     fakeSteps{project: open, shas: moved},
			in:        QuickInput{Input: Input{App: app, Last: ref(shaA, shaB)}, Compare: true},
			want:      Pass{Next: StepRender, Project: &open, Revision: "main", Sources: at(shaA, "cccc")},
			wantCalls: calls("cached "+shaA, "quick "+shaA),
		},
		{
			name:      "the first pass, the cache does not hold the request, a quick render: its ref, compared",
			steps:     fakeSteps{project: open, shas: shas, quick: map[string]bool{shaA: true}},
			in:        QuickInput{Input: Input{App: app}, Compare: true},
			want:      Pass{Next: StepDone, Project: &open, Revision: "main", Sources: at(shaA, shaB), Manifests: ref(shaA, shaB), Compare: synced},
			wantCalls: calls("cached "+shaA, "quick "+shaA, "compare "+shaA),
		},
		{
			name:      "the cache answers with another request's manifests: stops at the render",
			steps:     fakeSteps{project: open, shas: shas, cached: map[string]bool{shaA: true}, other: true},
			in:        QuickInput{Input: Input{App: app}, Compare: true},
			want:      Pass{Next: StepRender, Project: &open, Revision: "main", Sources: at(shaA, shaB)},
			wantCalls: calls("cached " + shaA),
		},
		{
			name:      "a hard pass renders: stops at the render",
			steps:     fakeSteps{project: open, shas: shas, cached: map[string]bool{shaA: true}},
			in:        QuickInput{Input: Input{App: app, Hard: true, Last: ref(shaA, shaB)}, Compare: true},
			want:      Pass{Next: StepRender, Project: &open, Revision: "main", Sources: at(shaA, shaB)},
			wantCalls: resolves,
		},
		{
			name:      "the compare runs on the cluster's queue: stops at the compare",
			steps:     fakeSteps{project: open, shas: shas},
			in:        QuickInput{Input: Input{App: app, Last: ref(shaA, shaB)}},
			want:      Pass{Next: StepCompare, Project: &open, Revision: "main", Sources: at(shaA, shaB), Manifests: ref(shaA, shaB)},
			wantCalls: resolves,
		},
		{
			name:      "the compare fails: stops at the compare",
			steps:     fakeSteps{project: open, shas: shas, compareErr: errors.New("connection refused")},
			in:        QuickInput{Input: Input{App: app, Last: ref(shaA, shaB)}, Compare: true},
			want:      Pass{Next: StepCompare, Project: &open, Revision: "main", Sources: at(shaA, shaB), Manifests: ref(shaA, shaB)},
			wantCalls: calls("compare " + shaA),
		},
		{
			name:      "the project cannot be read: nothing",
			steps:     fakeSteps{projectErr: errors.New("secret not found")},
			in:        QuickInput{Input: Input{App: app}, Compare: true},
			want:      Pass{Next: StepProject},
			wantCalls: []string{"project default"},
		},
		{
			name:      "the project refuses the app: no ls-remote",
			steps:     fakeSteps{project: closed, shas: shas},
			in:        QuickInput{Input: Input{App: app}, Compare: true},
			want:      Pass{Next: StepProject, Project: &closed},
			wantCalls: []string{"project default"},
		},
		{
			name:      "a source cannot be resolved: stops at the resolve",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA}},
			in:        QuickInput{Input: Input{App: app}, Compare: true},
			want:      Pass{Next: StepResolve, Project: &open},
			wantCalls: resolves,
		},
		{
			name:      "a chart's version is resolved by its own activity: stops at the resolve",
			steps:     fakeSteps{project: open, shas: shas},
			in:        QuickInput{Input: Input{App: chartApp}, Compare: true},
			want:      Pass{Next: StepResolve, Project: &open},
			wantCalls: []string{"project default"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := tc.steps
			a, err := New(&steps, &steps, &steps, &steps, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.QuickPass(t.Context(), tc.in)
			if err != nil {
				t.Fatalf("a step's failure failed the quick pass: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, steps.calls); diff != "" {
				t.Errorf("steps run (-want +got):\n%s", diff)
			}
			if !got.Valid(tc.in.Input) {
				t.Errorf("the quick pass's answer is not valid: %+v", got)
			}
		})
	}
}

// A pass is valid only when each step before Next has filled its part.
func TestPassValid(t *testing.T) {
	app := appspec.Application{Name: "web", Project: "default", Source: appspec.Source{RepoURL: "https://git.test/a.git", Path: "."}}
	proj := appspec.DefaultProjectSpec()
	srcs := []render.SourceRequest{{Source: app.Source, SHA: "aaaa"}}
	ref := &render.ManifestRef{SHA: "aaaa"}
	for _, tc := range []struct {
		name string
		p    Pass
		want bool
	}{
		{name: "nothing done", p: Pass{}, want: true},
		{name: "every step", p: Pass{Next: StepDone, Project: &proj, Sources: srcs, Manifests: ref, Compare: &cluster.CompareOutput{}}, want: true},
		{name: "past the project without one", p: Pass{Next: StepResolve}},
		{name: "past the resolve with too few sources", p: Pass{Next: StepRender, Project: &proj}},
		{name: "past the render without manifests", p: Pass{Next: StepCompare, Project: &proj, Sources: srcs}},
		{name: "done without a compare", p: Pass{Next: StepDone, Project: &proj, Sources: srcs, Manifests: ref}},
		{name: "a step this code does not have", p: Pass{Next: StepDone + 1, Project: &proj, Sources: srcs, Manifests: ref, Compare: &cluster.CompareOutput{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Valid(Input{App: app}); got != tc.want {
				t.Fatalf("Valid() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewRequiresEveryStep(t *testing.T) {
	var f fakeSteps
	for _, tc := range []struct {
		name string
		p    Projects
		r    Resolver
		rn   Renders
		c    Comparer
	}{
		{"no projects", nil, &f, &f, &f}, {"no resolver", &f, nil, &f, &f}, {"no renders", &f, &f, nil, &f}, {"no comparer", &f, &f, &f, nil},
	} {
		if _, err := New(tc.p, tc.r, tc.rn, tc.c, nil); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// The render request carries the project's signature keys, upper case,
// and none without a project or keys.
func TestRequestSignatureKeys(t *testing.T) {
	app := appspec.Application{Name: "web", Destination: appspec.Destination{Namespace: "web"}}
	signed := appspec.DefaultProjectSpec()
	signed.SignatureKeys = []appspec.SignatureKey{{KeyID: "4aee18f83afdeb23"}}
	for _, tc := range []struct {
		name string
		proj *appspec.Project
		want []string
	}{
		{"no project", nil, nil},
		{"no keys", new(appspec.DefaultProjectSpec()), nil},
		{"keys", &signed, []string{"4AEE18F83AFDEB23"}},
	} {
		if got := Request(app, nil, tc.proj).SignatureKeys; !slices.Equal(got, tc.want) {
			t.Errorf("%s: SignatureKeys = %v, want %v", tc.name, got, tc.want)
		}
	}
}
