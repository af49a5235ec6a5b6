package source

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// redisBed is the Redis of this test binary: the test bed's
// ($WINDLASS_TEST_REDIS_ADDR) or one started on first use and stopped by
// TestMain.
var redisBed struct {
	once sync.Once
	addr string
	err  error
	stop func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if redisBed.stop != nil {
		redisBed.stop()
	}
	os.Exit(code)
}

func redisAddr(t testing.TB) string {
	t.Helper()
	redisBed.once.Do(func() {
		if addr := os.Getenv(testbed.EnvRedisAddr); addr != "" {
			redisBed.addr = addr
			return
		}
		dir, err := os.MkdirTemp("", "windlass-source-redis-")
		if err != nil {
			redisBed.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := testbed.StartRedis(ctx, dir)
		if err != nil {
			redisBed.err = err
			_ = os.RemoveAll(dir)
			return
		}
		redisBed.addr = r.Addr()
		redisBed.stop = func() { _ = r.Stop(); _ = os.RemoveAll(dir) }
	})
	if redisBed.err != nil {
		t.Fatalf("redis: %v", redisBed.err)
	}
	return redisBed.addr
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// gitServer starts the test bed's HTTP Git server for t.
func gitServer(t *testing.T, opts ...testbed.GitServerOptions) *testbed.GitServer {
	t.Helper()
	return gitServerAt(t, t.TempDir(), opts...)
}

// gitServerAt starts the test bed's HTTP Git server on the repositories
// under root.
func gitServerAt(t *testing.T, root string, opts ...testbed.GitServerOptions) *testbed.GitServer {
	t.Helper()
	srv, err := testbed.StartGitServer(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// fixtureRepo creates a repository on srv and a work tree pushing to it.
func fixtureRepo(t *testing.T, srv *testbed.GitServer, name string, auth *githttp.BasicAuth) (string, *testbed.WorkRepo) {
	t.Helper()
	url, err := srv.CreateRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(t.Context(), t.TempDir(), url, auth)
	if err != nil {
		t.Fatal(err)
	}
	return url, w
}

// commit writes files and pushes a commit, returning its SHA.
func commit(t *testing.T, w *testbed.WorkRepo, msg string, files map[string]string) string {
	t.Helper()
	for p, c := range files {
		if err := w.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := w.CommitAndPush(t.Context(), msg)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// annotatedTag creates an annotated tag on the work tree's HEAD and pushes
// it; it returns the tag object's hash.
func annotatedTag(t *testing.T, w *testbed.WorkRepo, name string, auth *githttp.BasicAuth) string {
	t.Helper()
	repo, err := git.PlainOpen(w.Dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.CreateTag(name, head.Hash(), &git.CreateTagOptions{
		Message: "release " + name,
		Tagger:  &object.Signature{Name: "test", Email: "test@windlass.invalid", When: time.Now()},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec(ref.Name() + ":" + ref.Name())}}
	if auth != nil {
		opts.Auth = auth
	}
	if err := repo.PushContext(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	return ref.Hash().String()
}

// newActivities makes Activities on a fresh cache dir.
func newActivities(t *testing.T, creds CredentialResolver, opts ...Option) *Activities {
	t.Helper()
	a, err := New(t.TempDir(), creds, quietLogger(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// wantErrType checks that err is a non-retryable activity error of type
// typ, or, for typ "", a retryable one.
func wantErrType(t *testing.T, err error, typ string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want type %q", typ)
	}
	var app *temporal.ApplicationError
	isApp := errors.As(err, &app)
	if typ == "" {
		if isApp && app.NonRetryable() {
			t.Fatalf("error %v is not retryable, want retryable", err)
		}
		return
	}
	if !isApp || !app.NonRetryable() || failure.TypeOf(err) != typ {
		t.Fatalf("error %v: type %q (non-retryable %v), want non-retryable %q", err, failure.TypeOf(err), isApp && app.NonRetryable(), typ)
	}
}

// mirrorDir is where Activities keeps repoURL's mirror.
func (a *Activities) mirrorDir(repoURL string) string {
	return filepath.Join(a.cacheDir, "mirrors", urlKey(repoURL))
}
