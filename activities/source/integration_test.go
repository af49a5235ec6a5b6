package source

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestResolveAgainstServer resolves every kind of revision against the
// test bed's HTTP Git server.
func TestResolveAgainstServer(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "team/app.git", nil)
	c1 := commit(t, w, "one", map[string]string{"app/cm.yaml": "a: 1\n"})
	if err := w.Tag(t.Context(), "v1.0.0"); err != nil {
		t.Fatal(err)
	}
	c2 := commit(t, w, "two", map[string]string{"app/cm.yaml": "a: 2\n"})
	annotatedTag(t, w, "v1.1.0", nil)
	c3 := commit(t, w, "three", map[string]string{"app/cm.yaml": "a: 3\n"})
	if err := w.Tag(t.Context(), "v2.0.0"); err != nil {
		t.Fatal(err)
	}
	a := newActivities(t, nil)

	tests := []struct {
		rev, sha, ref, errType string
	}{
		{rev: "HEAD", sha: c3, ref: "HEAD"},
		{rev: "main", sha: c3, ref: "refs/heads/main"},
		{rev: "v1.0.0", sha: c1, ref: "refs/tags/v1.0.0"},
		{rev: "v1.1.0", sha: c2, ref: "refs/tags/v1.1.0"}, // annotated, peeled
		{rev: c1, sha: c1},
		{rev: c2[:7], sha: c2},
		{rev: strings.ToUpper(c1[:12]), sha: c1},
		{rev: "v1.*", sha: c2, ref: "refs/tags/v1.1.0"},
		{rev: ">=1.0.0 <1.1.0", sha: c1, ref: "refs/tags/v1.0.0"},
		{rev: "^2", sha: c3, ref: "refs/tags/v2.0.0"},
		{rev: "no-such-branch", errType: "RevisionNotFound"},
		{rev: "v9.*", errType: "RevisionNotFound"},
		{rev: "0000000", errType: "RevisionNotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.rev, func(t *testing.T) {
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: tt.rev})
			if tt.errType != "" {
				wantErrType(t, err, tt.errType)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(ResolveOutput{SHA: tt.sha, Ref: tt.ref}, out); d != "" {
				t.Errorf("resolved (-want +got):\n%s", d)
			}
		})
	}

	// A short SHA of a commit pushed after the mirror was made: fetched.
	c4 := commit(t, w, "four", map[string]string{"app/cm.yaml": "a: 4\n"})
	out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: c4[:9]})
	if err != nil || out.SHA != c4 {
		t.Fatalf("short SHA of a new commit: %+v, %v; want %s", out, err, c4)
	}
}

func TestResolveErrors(t *testing.T) {
	const user, pass = "fixture", "s3cret-Pa55"
	authSrv := gitServer(t, testbed.GitServerOptions{Username: user, Password: pass})
	authURL, w := fixtureRepo(t, authSrv, "private.git", &githttp.BasicAuth{Username: user, Password: pass})
	want := commit(t, w, "one", map[string]string{"a.yaml": "a: 1\n"})
	openSrv := gitServer(t)

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, wrong := write("good", pass), write("wrong", "not-"+pass)
	creds := func(file string) Credentials {
		return Credentials{Repos: []RepoCredential{{URLPrefix: authURL, Username: user, PasswordFile: file}}}
	}
	tests := []struct {
		name    string
		creds   Credentials
		url     string
		errType string // "" with retryable: a retryable error
		retry   bool
	}{
		{name: "no credentials", url: authURL, errType: "AuthenticationFailed"},
		{name: "wrong password", creds: creds(wrong), url: authURL, errType: "AuthenticationFailed"},
		{name: "repository not found", url: openSrv.URL("missing.git"), errType: "RepositoryNotFound"},
		{name: "connection refused", url: "http://" + testbed.ClosedAddr(t) + "/repo.git", retry: true},
		{name: "good password", creds: creds(good), url: authURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newActivities(t, tt.creds)
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: tt.url, Revision: "main"})
			switch {
			case tt.retry:
				wantErrType(t, err, "")
			case tt.errType != "":
				wantErrType(t, err, tt.errType)
			case err != nil:
				t.Fatal(err)
			case out.SHA != want:
				t.Errorf("SHA = %s, want %s", out.SHA, want)
			}
			if err != nil && strings.Contains(err.Error(), pass) {
				t.Errorf("error %q holds the password", err)
			}
		})
	}

	t.Run("checkout from an unreachable server is retryable", func(t *testing.T) {
		a := newActivities(t, nil)
		_, err := a.Checkout(t.Context(), "http://"+testbed.ClosedAddr(t)+"/repo.git", want)
		if err == nil || failure.TypeOf(failure.Activity(err)) != "" {
			t.Fatalf("Checkout error = %v, want a plain (retryable) error", err)
		}
	})
}

// TestRefCache checks that a moved branch is seen after the TTL or with
// Hard, that keys hold no URL or credential, and that Redis being down
// only costs the cache.
func TestRefCache(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "moving.git", nil)
	first := commit(t, w, "one", map[string]string{"a.yaml": "a: 1\n"})
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	const ttl = 700 * time.Millisecond
	a := newActivities(t, nil, WithRefCache(RedisRefCache{Client: rdb}, ttl))
	resolve := func(hard bool) string {
		t.Helper()
		out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main", Hard: hard})
		if err != nil {
			t.Fatal(err)
		}
		return out.SHA
	}
	if got := resolve(false); got != first {
		t.Fatalf("first resolve = %s, want %s", got, first)
	}
	keys, err := rdb.Keys(t.Context(), refCacheKeyPrefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !cmpContains(keys, refCacheKey(url)) {
		t.Fatalf("keys %v lack %s", keys, refCacheKey(url))
	}
	for _, k := range keys {
		if strings.Contains(k, "moving") || strings.Contains(k, "127.0.0.1") {
			t.Errorf("key %q holds the URL", k)
		}
	}

	second := commit(t, w, "two", map[string]string{"a.yaml": "a: 2\n"})
	if got := resolve(false); got != first {
		t.Errorf("within the TTL: %s, want the cached %s", got, first)
	}
	if got := resolve(true); got != second {
		t.Errorf("hard: %s, want %s", got, second)
	}
	third := commit(t, w, "three", map[string]string{"a.yaml": "a: 3\n"})
	deadline := time.Now().Add(10 * ttl)
	for got := resolve(false); got != third; got = resolve(false) {
		if time.Now().After(deadline) {
			t.Fatalf("after the TTL: %s, want %s", got, third)
		}
		time.Sleep(ttl / 7)
	}

	t.Run("redis down", func(t *testing.T) {
		down := redis.NewClient(&redis.Options{Addr: testbed.ClosedAddr(t)})
		t.Cleanup(func() { _ = down.Close() })
		b := newActivities(t, nil, WithRefCache(RedisRefCache{Client: down}, ttl))
		for range 2 {
			out, err := b.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main"})
			if err != nil || out.SHA != third {
				t.Fatalf("with Redis down: %+v, %v; want %s", out, err, third)
			}
		}
		if !b.refCacheDown.open() {
			t.Error("the cache was not skipped after failing")
		}
	})
}

// nopStore is a manifest cache that never has anything.
type nopStore struct{}

func (nopStore) Get(context.Context, string) ([]byte, error)              { return nil, render.ErrCacheMiss }
func (nopStore) Set(context.Context, string, []byte, time.Duration) error { return nil }

func cmpContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestConcurrentRenders renders one repository from 8 goroutines through
// the real Renderer, Checkouter and Redis store.
func TestConcurrentRenders(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "busy.git", nil)
	files := map[string]string{}
	for i := range 20 {
		n := string(rune('a' + i))
		files["app/"+n+".yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-" + n + "}\ndata: {k: v" + n + "}\n"
	}
	sha := commit(t, w, "manifests", files)
	a := newActivities(t, nil, WithShallowFetch(false)) // checks the mirror
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	r, err := render.NewRenderer(render.Config{Store: render.RedisStore{Client: rdb}, Git: a, CacheDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	req := render.SingleSource("busy", "default", appspec.Source{RepoURL: url, Path: "app"}, sha)

	const n = 8
	var (
		wg      sync.WaitGroup
		digests [n]string
		errs    [n]error
	)
	for i := range n {
		wg.Go(func() {
			// Hard: every goroutine goes through Checkout and renders.
			ref, err := r.Render(t.Context(), req, true)
			digests[i], errs[i] = ref.Digest, err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("render %d: %v", i, errs[i])
		}
		if digests[i] != digests[0] || digests[i] == "" {
			t.Errorf("render %d: digest %s, want %s", i, digests[i], digests[0])
		}
	}
	ref, err := r.Render(t.Context(), req, false)
	if err != nil || ref.Digest != digests[0] || ref.Count != len(files) {
		t.Errorf("cached render: %+v, %v", ref, err)
	}

	mirror := a.mirrorDir(url)
	if out, err := exec.Command("git", "--git-dir", mirror, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck of the mirror: %v\n%s", err, out)
	}
	repo, err := git.PlainOpen(mirror)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CommitObject(plumbing.NewHash(sha)); err != nil {
		t.Errorf("mirror lacks %s: %v", sha, err)
	}
	trees, _ := os.ReadDir(filepath.Join(a.cacheDir, "trees"))
	if len(trees) != 1 {
		t.Errorf("trees: %d entries, want 1 (no leftovers)", len(trees))
	}
}

// TestRenderErrorsReachWorkflow checks the error types the Render activity
// returns for a missing path and a missing commit: both permanent.
func TestRenderErrorsReachWorkflow(t *testing.T) {
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "paths.git", nil)
	sha := commit(t, w, "one", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})
	r, err := render.NewRenderer(render.Config{Store: nopStore{}, Git: newActivities(t, nil), CacheDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	act, err := render.New(r)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, sha, errType string }{
		{"path not found", "nope", sha, "PathNotFound"},
		{"commit not found", "app", strings.Repeat("0", 40), "RevisionNotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := render.SingleSource("paths", "default", appspec.Source{RepoURL: url, Path: tt.path}, tt.sha)
			_, err := act.Render(t.Context(), render.RenderInput{Request: req})
			wantErrType(t, err, tt.errType)
		})
	}
}
