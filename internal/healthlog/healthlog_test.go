package healthlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/testbed"
)

var (
	deploy = appspec.ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	svc    = appspec.ResourceKey{Kind: "Service", Namespace: "ns", Name: "web"}
	cm     = appspec.ResourceKey{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
)

func res(k appspec.ResourceKey, h appspec.HealthStatus, msg string) appspec.ResourceStatus {
	return appspec.ResourceStatus{ResourceKey: k, Health: h, HealthMessage: msg}
}

// appName is an app name of its own for each test, so that runs against
// the shared Redis do not meet.
func appName(t *testing.T) string {
	return fmt.Sprintf("test/%s-%d", t.Name(), time.Now().UnixNano())
}

func newStore(t *testing.T, c redis.UniversalClient, opts ...Option) *Store {
	t.Helper()
	s, err := New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Each compare's answer records what changed since the last: the first
// sight of each health, then only changes; a resource without health is
// left out, one that leaves the list is forgotten, and one that comes
// back is seen anew.
func TestRecord(t *testing.T) {
	s := newStore(t, redisClient(t))
	app := appName(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	steps := []struct {
		health    appspec.HealthStatus
		resources []appspec.ResourceStatus
		want      int
	}{
		{appspec.HealthProgressing, []appspec.ResourceStatus{res(deploy, appspec.HealthProgressing, "0 of 1 updated replicas are available"), res(svc, appspec.HealthHealthy, ""), {ResourceKey: cm}}, 3},
		{appspec.HealthProgressing, []appspec.ResourceStatus{res(deploy, appspec.HealthProgressing, "0 of 1 updated replicas are available"), res(svc, appspec.HealthHealthy, "")}, 0},
		{appspec.HealthHealthy, []appspec.ResourceStatus{res(deploy, appspec.HealthHealthy, ""), res(svc, appspec.HealthHealthy, "")}, 2},
		{appspec.HealthDegraded, []appspec.ResourceStatus{res(deploy, appspec.HealthDegraded, "progress deadline exceeded")}, 2},
		{appspec.HealthDegraded, []appspec.ResourceStatus{res(deploy, appspec.HealthDegraded, "progress deadline exceeded"), res(svc, appspec.HealthHealthy, "")}, 1},
	}
	for i, st := range steps {
		n, err := s.Record(t.Context(), app, st.health, st.resources, at(i))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if n != st.want {
			t.Errorf("step %d: %d transitions, want %d", i, n, st.want)
		}
	}
	got, err := s.History(t.Context(), app, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Transition{
		{Time: at(4), Resource: &svc, To: appspec.HealthHealthy},
		{Time: at(3), Resource: &deploy, From: appspec.HealthHealthy, To: appspec.HealthDegraded, Message: "progress deadline exceeded"},
		{Time: at(3), From: appspec.HealthHealthy, To: appspec.HealthDegraded},
		{Time: at(2), Resource: &deploy, From: appspec.HealthProgressing, To: appspec.HealthHealthy},
		{Time: at(2), From: appspec.HealthProgressing, To: appspec.HealthHealthy},
		{Time: at(0), Resource: &svc, To: appspec.HealthHealthy},
		{Time: at(0), Resource: &deploy, To: appspec.HealthProgressing, Message: "0 of 1 updated replicas are available"},
		{Time: at(0), To: appspec.HealthProgressing},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	cur, err := s.Current(t.Context(), app)
	if err != nil {
		t.Fatal(err)
	}
	wantCur := map[string]State{
		AppField:        {Health: appspec.HealthDegraded, LastTransitionTime: at(3)},
		deploy.String(): {Health: appspec.HealthDegraded, Message: "progress deadline exceeded", LastTransitionTime: at(3)},
		svc.String():    {Health: appspec.HealthHealthy, LastTransitionTime: at(4)},
	}
	if diff := cmp.Diff(wantCur, cur); diff != "" {
		t.Errorf("current (-want +got):\n%s", diff)
	}
	if top, err := s.History(t.Context(), app, 2); err != nil || len(top) != 2 || !top[0].Time.Equal(at(4)) {
		t.Errorf("history limited to 2: %v, %v; want the 2 newest", top, err)
	}
}

// The list keeps the newest transitions up to the limit, and both keys
// expire.
func TestRecordBounded(t *testing.T) {
	c := redisClient(t)
	s := newStore(t, c, WithLimit(5), WithTTL(time.Hour))
	app := appName(t)
	for i := range 8 {
		h := appspec.HealthHealthy
		if i%2 == 1 {
			h = appspec.HealthDegraded
		}
		if _, err := s.Record(t.Context(), app, h, nil, time.Unix(int64(i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.History(t.Context(), app, 0)
	if err != nil {
		t.Fatal(err)
	}
	var secs []int64
	for _, tr := range got {
		secs = append(secs, tr.Time.Unix())
	}
	if diff := cmp.Diff([]int64{7, 6, 5, 4, 3}, secs); diff != "" {
		t.Errorf("kept transitions (-want +got):\n%s", diff)
	}
	for _, k := range []string{stateKey(app), logKey(app)} {
		if ttl := c.TTL(t.Context(), k).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("%s: TTL %s, want at most the configured hour", k, ttl)
		}
	}
}

// A record equal to the last one the store wrote for the app is not sent
// again; a different one is.
func TestRecordSkipsUnchanged(t *testing.T) {
	c := redisClient(t)
	s := newStore(t, c)
	app := appName(t)
	rs := []appspec.ResourceStatus{res(deploy, appspec.HealthHealthy, "")}
	if _, err := s.Record(t.Context(), app, appspec.HealthHealthy, rs, time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	// Another writer (a second worker) changes the state behind the
	// store's back; the same answer again is skipped, a new one is not.
	if err := c.Del(t.Context(), stateKey(app)).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Record(t.Context(), app, appspec.HealthHealthy, rs, time.Unix(2, 0)); err != nil || n != 0 || c.Exists(t.Context(), stateKey(app)).Val() != 0 {
		t.Fatalf("same answer: %d transitions, %v; want it skipped", n, err)
	}
	if n, err := s.Record(t.Context(), app, appspec.HealthDegraded, rs, time.Unix(3, 0)); err != nil || n != 2 {
		t.Fatalf("new answer: %d transitions, %v; want 2 (the app and the resource, seen anew)", n, err)
	}
}

// A Redis that cannot be reached is an error, not a hang.
func TestRecordRedisDown(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	s := newStore(t, c)
	if _, err := s.Record(t.Context(), "p/a", appspec.HealthHealthy, nil, time.Unix(1, 0)); err == nil {
		t.Fatal("record with Redis down: no error")
	}
	if _, err := s.History(t.Context(), "p/a", 0); err == nil {
		t.Fatal("history with Redis down: no error")
	}
	if _, err := New(nil); err == nil {
		t.Fatal("New without a client: no error")
	}
}

// The script's two keys share a hash slot, so it runs on a Redis Cluster.
func TestRecordRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rc, err := testbed.StartRedisCluster(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Stop() })
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	s := newStore(t, c)
	app := appName(t)
	if n, err := s.Record(t.Context(), app, appspec.HealthProgressing, []appspec.ResourceStatus{res(deploy, appspec.HealthProgressing, "")}, time.Unix(1, 0)); err != nil || n != 2 {
		t.Fatalf("record on a cluster: %d transitions, %v; want 2", n, err)
	}
	got, err := s.History(t.Context(), app, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("history on a cluster: %v, %v; want 2 transitions", got, err)
	}
}

// BenchmarkRecord10k records the healths of an app of 10,000 resources
// whose every health changes at each record (the worst case: the
// unchanged case costs no Redis call).
func BenchmarkRecord10k(b *testing.B) {
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	b.Cleanup(func() { _ = c.Close() })
	s, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	app := fmt.Sprintf("bench/record-%d", time.Now().UnixNano())
	b.Cleanup(func() { _ = c.Del(context.Background(), stateKey(app), logKey(app)).Err() })
	rs := make([]appspec.ResourceStatus, 10_000)
	for i := range rs {
		rs[i].ResourceKey = appspec.ResourceKey{Kind: "ConfigMap", Namespace: "big", Name: fmt.Sprintf("cm-%05d", i)}
	}
	healths := []appspec.HealthStatus{appspec.HealthHealthy, appspec.HealthDegraded}
	for i := 0; b.Loop(); i++ {
		h := healths[i%2]
		for j := range rs {
			rs[j].Health = h
		}
		if n, err := s.Record(b.Context(), app, h, rs, time.Unix(int64(i), 0)); err != nil || n != len(rs)+1 {
			b.Fatalf("record: %d transitions, %v", n, err)
		}
	}
}
