package roles

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/probe"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// lockedBuffer is a buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWorkerRedisOutage: while its Redis is down, a worker is not ready
// and its readiness names Redis, yet it resolves revisions and renders
// (the ls-remote and manifest caches are passed over, and a lost manifest
// is rendered again), and the Redis client's complaints go to slog; once
// Redis is back, empty, the worker is ready and fills the caches again.
func TestWorkerRedisOutage(t *testing.T) {
	var logs lockedBuffer
	redis.SetLogger(redisLog{slog.New(slog.NewTextHandler(&logs, nil))}) // as newLogger does
	t.Cleanup(func() { redis.SetLogger(redisLog{slog.Default()}) })
	rd, err := testbed.StartRedis(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rd.Stop() })
	rdb, err := redisConn{}.client(rd.Addr()) // as a worker makes it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })

	repoURL := gitApp(t, "outage.git", "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: outage}\n")

	// The worker's Redis readers, wired as worker.New wires them.
	log := slog.New(slog.DiscardHandler)
	src, err := source.New(t.TempDir(), source.Credentials{}, log, source.WithRefCache(source.RedisRefCache{Client: rdb}, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := render.NewRenderer(render.Config{Store: render.RedisStore{Client: rdb}, Git: src, Revisions: src, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rnd, err := render.New(renderer)
	if err != nil {
		t.Fatal(err)
	}
	kubeUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(kubeUp.Close)
	started := &atomic.Bool{}
	started.Store(true)
	probes, err := workerReadiness(healthyTemporal, "default", rdb, &rest.Config{Host: kubeUp.URL}, started)
	if err != nil {
		t.Fatal(err)
	}
	ready := func() (int, probe.Report) {
		rec := httptest.NewRecorder()
		probe.Handler(probes, nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", probe.ReadyPath, nil))
		var r probe.Report
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("readyz body %q: %v", rec.Body, err)
		}
		return rec.Code, r
	}
	// work resolves HEAD and renders app at it, as a sync does: Render,
	// then Load of the ref by a later activity.
	work := func(t *testing.T, hard bool) render.ManifestRef {
		t.Helper()
		res, err := src.ResolveRevision(t.Context(), source.ResolveInput{RepoURL: repoURL, Revision: "HEAD"})
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		req := render.SingleSource("outage", "default", appspec.Source{RepoURL: repoURL, Path: "app"}, res.SHA)
		ref, err := rnd.Render(t.Context(), render.RenderInput{Request: req, Hard: hard})
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		objs, err := renderer.Load(t.Context(), ref)
		if err != nil || len(objs) != 1 || objs[0].GetName() != "outage" {
			t.Fatalf("load: %v, %v", objs, err)
		}
		return ref
	}
	cached := func(key string) bool { n, err := rdb.Exists(t.Context(), key).Result(); return err == nil && n == 1 }

	ref := work(t, false)
	if code, r := ready(); code != http.StatusOK {
		t.Fatalf("readyz with Redis up: %d %+v", code, r.Checks)
	}
	if !cached(ref.Key) {
		t.Fatal("the manifests are not in Redis")
	}

	if err := rd.Stop(); err != nil {
		t.Fatal(err)
	}
	code, r := ready()
	if code != http.StatusServiceUnavailable || r.Checks[checkRedis] == "ok" || !strings.Contains(r.Checks[checkRedis], rd.Addr()) ||
		r.Checks[checkTemporal] != "ok" || r.Checks[checkKube] != "ok" || r.Checks[checkWorker] != "ok" {
		t.Fatalf("readyz with Redis down: %d %+v; want 503 failing the redis check only", code, r.Checks)
	}
	work(t, false)
	work(t, true)
	if l := logs.String(); !strings.Contains(l, `msg="redis client"`) || !strings.Contains(l, rd.Addr()) {
		t.Errorf("the Redis client's log:\n%s\nwant its failed dials through slog", l)
	}

	if err := rd.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the worker to be ready again", func() bool { code, _ := ready(); return code == http.StatusOK })
	if cached(ref.Key) {
		t.Fatal("the restarted Redis is not empty")
	}
	// The caches are skipped for a while after a failure, then used again.
	eventually(t, time.Minute, "the manifests to be cached again", func() bool { return cached(work(t, false).Key) })
}
