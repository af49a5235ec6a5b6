package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/internal/testbed/repostore"
)

// TestSubmodules checks out a repository whose submodule has a submodule
// of its own, both by relative URL on a Git server that wants the
// parent's credential (registered for the parent alone); a submodule
// outside the allowed repositories is refused, by name, and leaves no
// checkout; with submodules off their folders stay empty.
func TestSubmodules(t *testing.T) {
	auth := &githttp.BasicAuth{Username: "deploy", Password: "sub-pa55-do-not-leak"}
	srv := gitServer(t, testbed.GitServerOptions{Username: auth.Username, Password: auth.Password})
	_, deep := fixtureRepo(t, srv, "team/deep.git", auth)
	deepSHA := commit(t, deep, "deep", map[string]string{"deep.yaml": "d: 1\n"})
	_, lib := fixtureRepo(t, srv, "team/lib.git", auth)
	if err := lib.Submodule("vendor/deep", deepSHA); err != nil {
		t.Fatal(err)
	}
	libSHA := commit(t, lib, "lib", map[string]string{"cm.yaml": "kind: ConfigMap\n",
		".gitmodules": "[submodule \"deep\"]\n\tpath = vendor/deep\n\turl = ../deep.git\n"})
	appURL, app := fixtureRepo(t, srv, "team/app.git", auth)
	if err := app.Submodule("libs/lib", libSHA); err != nil {
		t.Fatal(err)
	}
	appSHA := commit(t, app, "app", map[string]string{"app.yaml": "a: 1\n",
		".gitmodules": "[submodule \"lib\"]\n\tpath = libs/lib\n\turl = ../lib.git\n"})

	// A repository whose submodule leaves the allowed ones.
	_, secret := fixtureRepo(t, srv, "other/secret.git", auth)
	secretSHA := commit(t, secret, "secret", map[string]string{"token": "x\n"})
	evilURL, evil := fixtureRepo(t, srv, "team/evil.git", auth)
	if err := evil.Submodule("s", secretSHA); err != nil {
		t.Fatal(err)
	}
	evilSHA := commit(t, evil, "evil", map[string]string{".gitmodules": "[submodule \"s\"]\n\tpath = s\n\turl = " + srv.URL("other/secret.git") + "\n"})

	store := repostore.New(t, []settings.Repository{
		{URL: appURL, Username: auth.Username, Password: auth.Password},
		{URL: evilURL, Username: auth.Username, Password: auth.Password},
	}, nil)
	allowed := []string{strings.TrimSuffix(srv.URL("team/x"), "x") + "*"}

	a := newActivities(t, &RegisteredAuth{Repos: store}, WithSubmodules(allowed))
	dir, err := a.Checkout(t.Context(), appURL, appSHA)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		".gitmodules": "[submodule \"lib\"]\n\tpath = libs/lib\n\turl = ../lib.git\n", "app.yaml": "a: 1\n",
		"libs/lib/.gitmodules": "[submodule \"deep\"]\n\tpath = vendor/deep\n\turl = ../deep.git\n",
		"libs/lib/cm.yaml":     "kind: ConfigMap\n", "libs/lib/vendor/deep/deep.yaml": "d: 1\n",
	}
	if d := cmp.Diff(want, readTree(t, dir)); d != "" {
		t.Fatalf("checkout (-want +got):\n%s", d)
	}

	_, err = a.Checkout(t.Context(), evilURL, evilSHA)
	wantErrType(t, failure.Activity(err), ErrSubmoduleNotAllowed.Type())
	if msg := err.Error(); !strings.Contains(msg, "submodule s points at "+srv.URL("other/secret.git")) || strings.Contains(msg, "do-not-leak") {
		t.Fatalf("error %q: want it to name the submodule and its URL, and no secret", msg)
	}
	for _, n := range dirNames(t, filepath.Join(a.cacheDir, "trees")) {
		if strings.HasPrefix(n, urlKey(evilURL)) || strings.HasPrefix(n, tmpPrefix) {
			t.Errorf("checkout left behind: %s", n)
		}
	}

	off := newActivities(t, &RegisteredAuth{Repos: store})
	dir, err = off.Checkout(t.Context(), appURL, appSHA)
	if err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "libs", "lib")); err == nil && len(ents) > 0 {
		t.Fatalf("with submodules off, libs/lib holds %d entries", len(ents))
	}
}

func TestResolveSubmoduleURL(t *testing.T) {
	tests := []struct{ parent, raw, want, err string }{
		{parent: "https://git.example.com/team/app.git", raw: "../lib.git", want: "https://git.example.com/team/lib.git"},
		{parent: "https://git.example.com/team/app", raw: "./sub", want: "https://git.example.com/team/app/sub"},
		{parent: "git@git.example.com:team/app.git", raw: "../lib.git", want: "git@git.example.com:team/lib.git"},
		{parent: "https://git.example.com/team/app.git", raw: "https://other.example.com/x.git", want: "https://other.example.com/x.git"},
		{parent: "https://git.example.com/app.git", raw: "../../x.git", err: "climbs out"},
	}
	for _, tt := range tests {
		got, err := resolveSubmoduleURL(tt.parent, tt.raw)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("resolve(%q, %q) = %q, %v; want an error %q", tt.parent, tt.raw, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolve(%q, %q) = %q, %v; want %q", tt.parent, tt.raw, got, err, tt.want)
		}
	}
}

// TestSubmodulesOutsideProject: within the worker's allowed repositories,
// a submodule must also be one of the app's project's sourceRepos, at any
// depth. A new checkout is refused before it fetches the submodule; a
// checkout made for a wider project is refused to a narrower one from the
// submodules it recorded; each refusal is permanent and names the
// submodule and the project.
func TestSubmodulesOutsideProject(t *testing.T) {
	srv := gitServer(t, testbed.GitServerOptions{})
	deepURL, deep := fixtureRepo(t, srv, "other/deep.git", nil)
	deepSHA := commit(t, deep, "deep", map[string]string{"deep.yaml": "d: 1\n"})
	libURL, lib := fixtureRepo(t, srv, "team/lib.git", nil)
	if err := lib.Submodule("vendor/deep", deepSHA); err != nil {
		t.Fatal(err)
	}
	libSHA := commit(t, lib, "lib", map[string]string{"cm.yaml": "kind: ConfigMap\n",
		".gitmodules": "[submodule \"deep\"]\n\tpath = vendor/deep\n\turl = ../../other/deep.git\n"})
	appURL, app := fixtureRepo(t, srv, "team/app.git", nil)
	if err := app.Submodule("libs/lib", libSHA); err != nil {
		t.Fatal(err)
	}
	appSHA := commit(t, app, "app", map[string]string{"app.yaml": "a: 1\n",
		".gitmodules": "[submodule \"lib\"]\n\tpath = libs/lib\n\turl = ../lib.git\n"})
	base := strings.TrimSuffix(srv.URL("x"), "x")
	everything := []string{base + "team/*", base + "other/*"}

	proj := func(name string, repos ...string) *appspec.Project {
		return &appspec.Project{Name: name, SourceRepos: repos}
	}
	narrow := proj("narrow", appURL)
	noDeep := proj("no-deep", appURL, libURL)
	denied := proj("denied", "*", "!"+deepURL)
	wide := proj("wide", everything...)
	refusals := []struct {
		name string
		proj *appspec.Project
		msg  string
	}{
		{"submodule outside", narrow, "submodule libs/lib points at " + libURL + ", which is not one of the sourceRepos of project narrow"},
		{"nested submodule outside", noDeep, "submodule libs/lib/vendor/deep points at " + deepURL + ", which is not one of the sourceRepos of project no-deep"},
		{"nested submodule denied", denied, "submodule libs/lib/vendor/deep points at " + deepURL + ", which is not one of the sourceRepos of project denied"},
	}
	refused := func(t *testing.T, a *Activities, p *appspec.Project, msg string) {
		t.Helper()
		_, err := a.CheckoutIn(t.Context(), appURL, appSHA, p)
		wantErrType(t, failure.Activity(err), ErrSubmoduleNotAllowed.Type())
		if !strings.Contains(err.Error(), msg) {
			t.Fatalf("error %q does not say %q", err, msg)
		}
	}

	for _, tc := range refusals {
		t.Run("new checkout, "+tc.name, func(t *testing.T) {
			a := newActivities(t, nil, WithSubmodules(everything))
			refused(t, a, tc.proj, tc.msg)
			if left := dirNames(t, filepath.Join(a.cacheDir, "trees")); len(left) > 0 {
				t.Errorf("checkouts left behind: %v", left)
			}
			if _, err := os.Stat(a.mirrorDir(libURL)); tc.proj == narrow && err == nil {
				t.Errorf("the refused submodule was fetched")
			}
		})
	}

	t.Run("checkout made for a wider project", func(t *testing.T) {
		a := newActivities(t, nil, WithSubmodules(everything))
		dir, err := a.CheckoutIn(t.Context(), appURL, appSHA, wide)
		if err != nil {
			t.Fatal(err)
		}
		if got := readTree(t, dir)["libs/lib/vendor/deep/deep.yaml"]; got != "d: 1\n" {
			t.Fatalf("nested submodule file = %q", got)
		}
		for _, tc := range refusals {
			refused(t, a, tc.proj, tc.msg)
		}
		for _, p := range []*appspec.Project{wide, proj("any", "*"), nil} {
			if again, err := a.CheckoutIn(t.Context(), appURL, appSHA, p); err != nil || again != dir {
				t.Fatalf("checkout for %+v = %q, %v; want %q", p, again, err, dir)
			}
		}
		if _, err := a.Checkout(t.Context(), appURL, appSHA); err != nil {
			t.Fatal(err)
		}
		// Evicted, the checkout takes its list along; written again for the
		// narrow project, it is refused afresh.
		a.treeGrace = 0
		if res, err := a.Evict(t.Context(), 0, 0); err != nil || res.Removed == 0 {
			t.Fatalf("evict = %+v, %v", res, err)
		}
		if left := dirNames(t, filepath.Join(a.cacheDir, "trees")); len(left) > 0 {
			t.Fatalf("left after eviction: %v", left)
		}
		refused(t, a, narrow, refusals[0].msg)
	})
}
