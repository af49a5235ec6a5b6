package reconcile

import (
	"context"
	"errors"
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
	compareErr error
	calls      []string
}

func (f *fakeSteps) Cached(_ context.Context, req render.Request) (render.ManifestRef, bool) {
	sha := req.Sources[0].SHA
	f.calls = append(f.calls, "cached "+sha)
	if !f.cached[sha] {
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
	app := appspec.Application{Name: "web", Project: "default",
		Source:      appspec.Source{RepoURL: repoA, Path: "."},
		Destination: appspec.Destination{Server: appspec.InClusterServer, Namespace: "web"}}.Defaulted()
	open := appspec.DefaultProjectSpec()
	closed := open
	closed.SourceRepos = []string{"https://git.test/other.git"}
	both := []source.ResolveInput{{RepoURL: repoA, Revision: "main"}, {RepoURL: repoB, Revision: "main"}}
	compare := &cluster.CompareInput{Manifests: render.ManifestRef{SHA: shaA}}
	synced := &cluster.CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy}
	resolved := []source.ResolveOutput{{SHA: shaA, Ref: "refs/heads/main"}, {SHA: shaB, Ref: "refs/heads/main"}}
	// The request the workflow hands over, without SHAs; the cache's ref
	// is of that request at the resolved SHAs.
	unresolved := &render.Request{AppName: "web", Namespace: "web", Sources: []render.SourceRequest{
		{Source: appspec.Source{RepoURL: repoA, Path: "."}}, {Source: appspec.Source{RepoURL: repoB, Path: "."}}}}
	cachedRef := func(a, b string) *render.ManifestRef {
		req := *unresolved
		req.Sources = []render.SourceRequest{{Source: unresolved.Sources[0].Source, SHA: a}, {Source: unresolved.Sources[1].Source, SHA: b}}
		return &render.ManifestRef{Key: req.Key(), SHA: a, Count: 3, Request: req}
	}
	moved := []source.ResolveOutput{resolved[0], {SHA: "cccc", Ref: "refs/heads/main"}}
	compareAny := &cluster.CompareInput{}

	for _, tc := range []struct {
		name      string
		steps     fakeSteps
		in        PassInput
		want      PassOutput
		wantCalls []string
	}{
		{
			name:      "nothing moved: every step",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Compare: compare},
			want:      PassOutput{Project: &open, Resolved: resolved, Compare: synced},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "compare " + shaA},
		},
		{
			name:      "a source moved: no compare",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: "cccc"}},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Compare: compare},
			want:      PassOutput{Project: &open, Resolved: []source.ResolveOutput{resolved[0], {SHA: "cccc", Ref: "refs/heads/main"}}},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB},
		},
		{
			name:      "a source moved, the cache holds the new request: its ref and its compare",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: "cccc"}, cached: map[string]bool{shaA: true}},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Render: unresolved, Compare: compare},
			want:      PassOutput{Project: &open, Resolved: moved, Rendered: cachedRef(shaA, "cccc"), Compare: synced},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "cached " + shaA, "compare " + shaA},
		},
		{
			name:      "nothing rendered before (the first pass), the cache holds the request: its ref and its compare",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: "dddd", repoB: shaB}, cached: map[string]bool{"dddd": true}},
			in:        PassInput{Sources: both, Render: unresolved, Compare: compareAny},
			want:      PassOutput{Project: &open, Resolved: []source.ResolveOutput{{SHA: "dddd", Ref: "refs/heads/main"}, resolved[1]}, Rendered: cachedRef("dddd", shaB), Compare: synced},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "cached dddd", "compare dddd"},
		},
		{
			name:      "the cache holds the new request, no compare asked for: its ref",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}, cached: map[string]bool{shaA: true}},
			in:        PassInput{Sources: both, Render: unresolved},
			want:      PassOutput{Project: &open, Resolved: resolved, Rendered: cachedRef(shaA, shaB)},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "cached " + shaA},
		},
		{
			name:      "a source moved, the cache does not hold the new request: no compare",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: "cccc"}},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Render: unresolved, Compare: compare},
			want:      PassOutput{Project: &open, Resolved: moved},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "cached " + shaA},
		},
		{
			name:      "nothing moved: the cache is not asked",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}, cached: map[string]bool{shaA: true}},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Render: unresolved, Compare: compare},
			want:      PassOutput{Project: &open, Resolved: resolved, Compare: synced},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "compare " + shaA},
		},
		{
			name:      "a render request of other sources than resolved: not looked up",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}, cached: map[string]bool{shaA: true}},
			in:        PassInput{Sources: both, Render: &render.Request{AppName: "web", Sources: unresolved.Sources[:1]}, Compare: compareAny},
			want:      PassOutput{Project: &open, Resolved: resolved},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB},
		},
		{
			name:      "the compare of cached manifests fails: their ref",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}, cached: map[string]bool{shaA: true}, compareErr: errors.New("connection refused")},
			in:        PassInput{Sources: both, Render: unresolved, Compare: compareAny},
			want:      PassOutput{Project: &open, Resolved: resolved, Rendered: cachedRef(shaA, shaB)},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "cached " + shaA, "compare " + shaA},
		},
		{
			name:      "no compare asked for (the first pass, or a cluster with a queue of its own)",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}},
			in:        PassInput{Sources: both},
			want:      PassOutput{Project: &open, Resolved: resolved},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB},
		},
		{
			name:      "the project cannot be read: nothing",
			steps:     fakeSteps{projectErr: errors.New("secret not found")},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Compare: compare},
			want:      PassOutput{},
			wantCalls: []string{"project default"},
		},
		{
			name:      "the project refuses the app: no ls-remote",
			steps:     fakeSteps{project: closed, shas: map[string]string{repoA: shaA, repoB: shaB}},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Compare: compare},
			want:      PassOutput{Project: &closed},
			wantCalls: []string{"project default"},
		},
		{
			name:      "a source cannot be resolved: the project only",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA}},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Compare: compare},
			want:      PassOutput{Project: &open},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB},
		},
		{
			name:      "the compare fails: the project and the revisions",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}, compareErr: errors.New("connection refused")},
			in:        PassInput{Sources: both, Expect: []string{shaA, shaB}, Compare: compare},
			want:      PassOutput{Project: &open, Resolved: resolved},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB, "compare " + shaA},
		},
		{
			name:      "fewer expected SHAs than sources: no compare",
			steps:     fakeSteps{project: open, shas: map[string]string{repoA: shaA, repoB: shaB}},
			in:        PassInput{Sources: both, Expect: []string{shaA}, Compare: compare},
			want:      PassOutput{Project: &open, Resolved: resolved},
			wantCalls: []string{"project default", "resolve " + repoA, "resolve " + repoB},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := tc.steps
			a, err := New(&steps, &steps, &steps, &steps, nil)
			if err != nil {
				t.Fatal(err)
			}
			in := tc.in
			in.Project, in.App = "default", app
			got, err := a.QuickPass(t.Context(), in)
			if err != nil {
				t.Fatalf("a step's failure failed the quick pass: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, steps.calls); diff != "" {
				t.Errorf("steps run (-want +got):\n%s", diff)
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
