package render

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
)

var errOutsideProject = errors.New("submodule outside the project")

// scopedCheckouter records the projects it checks out for, and refuses
// one whose sourceRepos lack "*" (as a submodule outside them would be).
type scopedCheckouter struct {
	Checkouter
	plain int
	projs []appspec.Project
}

func (c *scopedCheckouter) Checkout(ctx context.Context, repoURL, sha string) (string, error) {
	c.plain++
	return c.Checkouter.Checkout(ctx, repoURL, sha)
}

func (c *scopedCheckouter) CheckoutIn(ctx context.Context, repoURL, sha string, proj *appspec.Project) (string, error) {
	c.projs = append(c.projs, *proj)
	if !slices.Contains(proj.SourceRepos, "*") {
		return "", errOutsideProject
	}
	return c.Checkouter.Checkout(ctx, repoURL, sha)
}

// TestRenderScope: a request's project scope reaches the checkout of
// every Git source (ref sources too), and a refusal fails the render; a
// request without one checks out as before; apps of projects whose
// sourceRepos differ share no directory render.
func TestRenderScope(t *testing.T) {
	co, base := fixtureRequest(t, "a")
	sc := &scopedCheckouter{Checkouter: co}
	r, err := NewRenderer(Config{Store: NewMemoryStore(), Git: sc, CacheDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	scoped := func(app, project string, repos ...string) Request {
		req := base
		req.AppName = app
		req.Sources = append([]SourceRequest{{Source: appspec.Source{RepoURL: base.Sources[0].RepoURL, Ref: "values"}, SHA: base.Sources[0].SHA}}, base.Sources...)
		req.Scope = &SourceScope{Project: project, SourceRepos: repos}
		return req
	}

	open := scoped("web-1", "open", "*")
	if _, err := r.Render(t.Context(), open, false); err != nil {
		t.Fatal(err)
	}
	want := []appspec.Project{{Name: "open", SourceRepos: []string{"*"}}, {Name: "open", SourceRepos: []string{"*"}}}
	if d := cmp.Diff(want, sc.projs); d != "" || sc.plain != 0 {
		t.Fatalf("checkouts for projects (-want +got):\n%s\nplain checkouts: %d", d, sc.plain)
	}

	_, err = r.Render(t.Context(), scoped("web-1", "closed", "https://elsewhere.example/*"), false)
	if !errors.Is(err, errOutsideProject) {
		t.Fatalf("render in a project the checkout refuses: %v", err)
	}

	sc.projs = nil
	if _, err := r.Render(t.Context(), base, false); err != nil {
		t.Fatal(err)
	}
	if sc.projs != nil || sc.plain != 1 {
		t.Fatalf("a request without a scope checked out for %v, %d plain", sc.projs, sc.plain)
	}

	// Directory renders are shared by apps of one project's sourceRepos,
	// not across projects whose sourceRepos differ.
	if _, ok := r.Cached(t.Context(), scoped("web-2", "open-too", "*")); !ok {
		t.Error("another app with the same sourceRepos does not share the render")
	}
	if _, ok := r.Cached(t.Context(), scoped("web-2", "narrow", "*", "!https://git.example/other.git")); ok {
		t.Error("an app of a project with other sourceRepos shares the render")
	}
	if open.Key() == scoped("web-1", "other", "*").Key() || !strings.HasPrefix(open.Key(), keyPrefix) {
		t.Error("the app's own key does not name its project")
	}
}
