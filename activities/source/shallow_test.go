package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "cmp"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// pushRef points ref of the work tree's remote at sha (forced).
func pushRef(t *testing.T, w *testbed.WorkRepo, ref, sha string) {
	t.Helper()
	repo, err := git.PlainOpen(w.Dir)
	if err != nil {
		t.Fatal(err)
	}
	name := plumbing.ReferenceName(ref)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(name, plumbing.NewHash(sha))); err != nil {
		t.Fatal(err)
	}
	err = repo.PushContext(t.Context(), &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)}})
	if err != nil && err != git.NoErrAlreadyUpToDate {
		t.Fatal(err)
	}
}

// mirrorBranches lists the branches the mirror of repoURL has fetched.
func mirrorBranches(t *testing.T, a *Activities, repoURL string) []string {
	t.Helper()
	repo, err := git.PlainOpen(a.mirrorDir(repoURL))
	if err != nil {
		t.Fatal(err)
	}
	refs, err := repo.References()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name().IsBranch() {
			names = append(names, r.Name().Short())
		}
		return nil
	})
	return names
}

// TestCheckoutFetches: a checkout from an empty mirror fetches the commit
// alone when the server serves it (a branch's or a pull request's head),
// and the whole repository otherwise (an older commit); a commit that only
// refs/pull/N/head holds resolves and checks out, from an empty mirror or
// a full one; a commit no reference holds is a clear, permanent error.
func TestCheckoutFetches(t *testing.T) {
	root := t.TempDir()
	srv := gitServerAt(t, root)
	url, w := fixtureRepo(t, srv, "prs.git", nil)
	old := commit(t, w, "one", map[string]string{"a.yaml": "v: 1\n"})
	tip := commit(t, w, "two", map[string]string{"a.yaml": "v: 2\n"})
	pr := commit(t, w, "pull request", map[string]string{"a.yaml": "v: pr\n"})
	pushRef(t, w, "refs/pull/1/head", pr)
	pushRef(t, w, "refs/heads/main", tip) // only refs/pull/1/head holds pr now
	// A second URL of the same repository on a server that serves any
	// reachable commit, as GitHub does.
	if err := os.Symlink(filepath.Join(root, "prs.git"), filepath.Join(root, "reachable.git")); err != nil {
		t.Fatal(err)
	}
	allowReachable(t, filepath.Join(root, "prs.git"))
	reachableURL := strings.TrimSuffix(url, "prs.git") + "reachable.git"

	shallow := []Option{WithShallowFetch(true)}
	full := []Option{WithShallowFetch(false)}
	for _, tc := range []struct {
		name, rev, sha, want string
		url                  string // url if empty
		opts                 []Option
		warm                 string // check this commit out first
		wantBranches         []string
	}{
		{name: "branch head, shallow", rev: "main", sha: tip, want: "v: 2\n", opts: shallow},
		{name: "older commit, full fetch", rev: old[:10], sha: old, want: "v: 1\n", opts: shallow, wantBranches: []string{"main"}},
		{name: "older commit, shallow where the server allows", url: reachableURL, rev: old, sha: old, want: "v: 1\n", opts: shallow},
		{name: "pull request head, shallow", rev: "refs/pull/1/head", sha: pr, want: "v: pr\n", opts: shallow},
		{name: "pull request head, full mirror", rev: "refs/pull/1/head", sha: pr, want: "v: pr\n", opts: full,
			warm: old, wantBranches: []string{"main"}},
		{name: "branch head, shallow off", rev: "main", sha: tip, want: "v: 2\n", opts: []Option{WithShallowFetch(false)}, wantBranches: []string{"main"}},
		{name: "branch head, shallow by default", rev: "main", sha: tip, want: "v: 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := gocmp.Or(tc.url, url)
			a := newActivities(t, nil, tc.opts...)
			if tc.warm != "" {
				if _, err := a.Checkout(t.Context(), url, tc.warm); err != nil {
					t.Fatal(err)
				}
			}
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: tc.rev})
			if err != nil {
				t.Fatal(err)
			}
			if out.SHA != tc.sha {
				t.Fatalf("resolve %s = %s, want %s", tc.rev, out.SHA, tc.sha)
			}
			dir, err := a.Checkout(t.Context(), url, out.SHA)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string{"a.yaml": tc.want}, readTree(t, dir)); diff != "" {
				t.Fatalf("checkout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantBranches, mirrorBranches(t, a, url)); diff != "" {
				t.Errorf("mirror branches (-want +got):\n%s", diff)
			}
			if m, ok := a.RevisionMetadata(url, out.SHA); !ok || m.Message == "" {
				t.Errorf("no metadata for %s after the checkout: %+v", out.SHA, m)
			}
			if left := dirNames(t, filepath.Join(a.cacheDir, "mirrors")); len(left) != 1 {
				t.Errorf("mirrors dir holds %v; want the mirror alone", left)
			}
		})
	}

	t.Run("commit no reference holds", func(t *testing.T) {
		a := newActivities(t, nil, WithShallowFetch(true))
		missing := strings.Repeat("ab", 20)
		_, err := a.Checkout(t.Context(), url, missing)
		wantErrType(t, failure.Activity(err), ErrRevisionNotFound.Type())
		if !strings.Contains(err.Error(), "no reference of the server holds it") {
			t.Errorf("error %q does not say why", err)
		}
		if ents, _ := os.ReadDir(filepath.Join(a.cacheDir, "trees")); len(ents) > 0 {
			t.Errorf("checkouts left behind: %v", ents)
		}
	})
}

// allowReachable lets the server send any reachable commit by SHA
// (uploadpack.allowReachableSHA1InWant).
func allowReachable(t *testing.T, bare string) {
	t.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := repo.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Raw.Section("uploadpack").SetOption("allowReachableSHA1InWant", "true")
	if err := repo.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
}

// TestShallowThenOtherRevisions follows one worker, shallow by default,
// through an app's life: each new head is fetched alone while the mirror
// is empty; a rollback to a commit no reference holds falls back to the
// full fetch; later heads come through the mirror's incremental fetch;
// every checkout holds its commit's files and metadata, and a short SHA
// resolves once the mirror is full.
func TestShallowThenOtherRevisions(t *testing.T) {
	srv := gitServerAt(t, t.TempDir())
	url, w := fixtureRepo(t, srv, "life.git", nil)
	a := newActivities(t, nil)
	var (
		shas     []string
		versions = map[string]string{}
	)
	push := func(v string) string {
		t.Helper()
		sha := commit(t, w, "v"+v, map[string]string{"a.yaml": "v: " + v + "\n"})
		shas = append(shas, sha)
		versions[sha] = v
		return sha
	}
	check := func(rev, wantSHA string, wantBranches []string) {
		t.Helper()
		out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: rev, Hard: true})
		if err != nil {
			t.Fatal(err)
		}
		if out.SHA != wantSHA {
			t.Fatalf("resolve %s = %s, want %s", rev, out.SHA, wantSHA)
		}
		dir, err := a.Checkout(t.Context(), url, out.SHA)
		if err != nil {
			t.Fatalf("checkout %s: %v", rev, err)
		}
		want := map[string]string{"a.yaml": "v: " + versions[wantSHA] + "\n"}
		if d := cmp.Diff(want, readTree(t, dir)); d != "" {
			t.Fatalf("checkout of %s (-want +got):\n%s", rev, d)
		}
		if m, ok := a.RevisionMetadata(url, out.SHA); !ok || m.Message != "v"+versions[wantSHA] {
			t.Errorf("metadata of %s = %+v, %v", rev, m, ok)
		}
		if d := cmp.Diff(wantBranches, mirrorBranches(t, a, url)); d != "" {
			t.Errorf("after %s, mirror branches (-want +got):\n%s", rev, d)
		}
	}
	push("1")
	push("2")
	check("main", push("3"), nil)             // the head alone
	check("main", push("4"), nil)             // the next head alone: the mirror is still empty
	check(shas[0], shas[0], []string{"main"}) // rollback: no reference holds v1, so the full fetch
	check("main", push("5"), []string{"main"})
	check(shas[1][:12], shas[1], []string{"main"}) // a short SHA, from the full mirror
	check(shas[2], shas[2], []string{"main"})      // an earlier checkout, from the cache
}
