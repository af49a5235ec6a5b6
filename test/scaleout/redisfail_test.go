package scaleout

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// Issue 28: the Redis primary is killed with SIGKILL while a fleet's first
// syncs run, with `windlass server` and `windlass worker` reaching Redis
// through the Sentinel flags, then the Cluster flags. See failOverRedis.
func TestRedisSentinelFailoverUnderSyncs(t *testing.T) {
	ctx := t.Context()
	rs, err := testbed.StartRedisSentinel(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Stop() })
	sentinels := rs.SentinelAddrs()
	failOverRedis(t, failingRedis{
		flags:  []string{"--redis-address", strings.Join(sentinels, ","), "--redis-sentinel-master", testbed.SentinelMaster},
		client: redis.NewFailoverClient(&redis.FailoverOptions{MasterName: testbed.SentinelMaster, SentinelAddrs: sentinels}),
		kill:   rs.Kill,
		pick: func(ctx context.Context) (string, string, error) {
			primary, err := rs.Primary(ctx)
			if err != nil {
				return "", "", err
			}
			sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
			defer sc.Close()
			replicas, err := sc.Replicas(ctx, testbed.SentinelMaster).Result()
			if err != nil || len(replicas) != 1 {
				return "", "", fmt.Errorf("replicas of the primary: %v, %w", replicas, err)
			}
			return primary, replicas[0]["ip"] + ":" + replicas[0]["port"], nil
		},
	})
}

func TestRedisClusterFailoverUnderSyncs(t *testing.T) {
	ctx := t.Context()
	rc, err := testbed.StartRedisCluster(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Stop() })
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs()})
	failOverRedis(t, failingRedis{
		flags:  []string{"--redis-address", strings.Join(rc.Addrs(), ","), "--redis-cluster"},
		client: cc,
		kill:   rc.Kill,
		// The victim is the primary of the revocation generation, which
		// every authenticated request reads.
		pick: func(ctx context.Context) (string, string, error) {
			slot, err := cc.ClusterKeySlot(ctx, revocationGenerationKey).Result()
			if err != nil {
				return "", "", err
			}
			shards, err := cc.ClusterShards(ctx).Result()
			if err != nil {
				return "", "", err
			}
			for _, sh := range shards {
				if !slices.ContainsFunc(sh.Slots, func(r redis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
					continue
				}
				var primary, replica string
				for _, n := range sh.Nodes {
					addr := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
					switch {
					case n.Role == "master":
						primary = addr
					case n.Role == "replica" && n.Health == "online":
						replica = addr
					}
				}
				if primary != "" && replica != "" {
					return primary, replica, nil
				}
			}
			return "", "", fmt.Errorf("no primary with an online replica for slot %d in %v", slot, shards)
		},
	})
}

// revocationGenerationKey is the Redis key of the sessions' revocation
// generation (api/auth): a session of another generation is refused.
const revocationGenerationKey = "windlass:auth:revoked-generation:v1"

// failingRedis is a Redis that fails over, as the test sees it.
type failingRedis struct {
	// flags point a server and a worker at it.
	flags []string
	// client reaches it as those processes do.
	client redis.UniversalClient
	// pick names the primary to kill and the replica that replaces it.
	pick func(ctx context.Context) (victim, successor string, err error)
	kill func(addr string) error
}

// failOverRedis runs a server and a worker on r (on a task queue of their
// own, so that the bed's workers take none of the work) and a fleet of n
// automated apps, each at its own path. A session is issued and another
// revoked, then the primary is killed as soon as the first sync runs.
//   - During the failover a session is accepted or refused with a 503
//     naming Redis (fail closed), the revoked one never accepted.
//   - After it, the session is accepted again, the revoked one still
//     refused, within 30 s of the kill.
//   - Every app converges with exactly one sync; a new commit then syncs
//     every app once more, and its rendered manifests fill the cache again,
//     on the promoted replica.
func failOverRedis(t *testing.T, r failingRedis) {
	const n = 4
	ctx := t.Context()
	t.Cleanup(func() { _ = r.client.Close() })
	prefix := fmt.Sprintf("rf%d", time.Now().UnixNano()%1e6)
	fleet := startRedisFleet(t, prefix, r.flags)
	login := func() string {
		t.Helper()
		var s struct {
			Token string `json:"token"`
		}
		if _, err := requestAt(ctx, fleet.api, "", http.MethodPost, "/api/v1/session", map[string]string{"username": "admin", "password": fleet.password}, &s); err != nil {
			t.Fatal(err)
		}
		return s.Token
	}
	session, revoked := login(), login()
	if _, err := requestAt(ctx, fleet.api, revoked, http.MethodDelete, "/api/v1/session", nil, nil); err != nil {
		t.Fatal(err)
	}
	const probe = "/api/v1/session/userinfo"
	if code, _, body := rawGet(t, fleet.api+probe, revoked); code != http.StatusUnauthorized {
		t.Fatalf("revoked session before the failover: %d %s", code, body)
	}

	names := make([]string, n)
	files := map[string]string{}
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		maps.Copy(files, appFiles(names[i], false))
	}
	cleanupNamespaces(t, prefix+"-")
	jobs := watchHookJobs(t, prefix)
	repoURL, work := newWorkRepo(t, prefix)
	// push commits the fleet's files with greeting in every ConfigMap.
	push := func(greeting string) string {
		t.Helper()
		for _, name := range names {
			files[name+"/configmap.yaml"] = strings.Replace(configMapYAML, "hello", greeting, 1)
		}
		return commitFiles(t, work, files, greeting)
	}
	first := push("before")

	// A node may list a replica in its slot map a moment after the
	// cluster says it is ready.
	var victim, successor string
	eventually(t, 10*time.Second, 100*time.Millisecond, "the primary to kill and its replica", func() (bool, string) {
		var err error
		victim, successor, err = r.pick(ctx)
		return err == nil, fmt.Sprint(err)
	})
	start := time.Now()
	for _, name := range names {
		if _, err := requestAt(ctx, fleet.api, session, http.MethodPost, "/api/v1/applications",
			appBody(name, repoURL, name, appspec.InClusterServer, true), nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, 100*time.Millisecond, "the first sync to run", func() (bool, string) {
		for _, name := range names {
			if _, err := bed.temporal.DescribeWorkflowExecution(ctx, workflows.SyncWorkflowID("default", name, 1), ""); err == nil {
				return true, ""
			}
		}
		return false, "no sync yet"
	})
	// What the primary holds reaches the replica before the crash: the
	// revocation above would otherwise be lost, as documented.
	waitReplicated(t, victim)
	before := manifestKeys(t, r.client)
	if err := r.kill(victim); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed the primary %s after %s, %d apps synced; %s takes over", victim, since(start), countApps(t, prefix, "&sync=Synced"), successor)

	// Fail closed while there is no primary; served again once there is.
	refusals := 0
	eventually(t, 30*time.Second, 100*time.Millisecond, "the session accepted again", func() (bool, string) {
		if code, _, body := rawGet(t, fleet.api+probe, revoked); code != http.StatusUnauthorized && code != http.StatusServiceUnavailable {
			t.Fatalf("revoked session during the failover: %d %s", code, body)
		}
		code, _, body := rawGet(t, fleet.api+probe, session)
		if code == http.StatusServiceUnavailable && strings.Contains(body, "Redis is unreachable") {
			refusals++
			return false, body
		}
		if code != http.StatusOK {
			t.Fatalf("session during the failover: %d %s; want 200 or a 503 naming Redis", code, body)
		}
		return true, ""
	})
	t.Logf("the session was accepted again %s after the kill, refused %d times meanwhile", since(killed), refusals)
	if code, _, body := rawGet(t, fleet.api+probe, revoked); code != http.StatusUnauthorized {
		t.Errorf("revoked session after the failover: %d %s; want 401", code, body)
	}

	allSyncedAt(t, names, first, 1)
	t.Logf("%d apps synced %s after the kill", n, since(killed))
	second := push("after")
	for _, name := range names {
		if _, err := requestAt(ctx, fleet.api, session, http.MethodPost, "/api/v1/applications/"+name+"/refresh", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	allSyncedAt(t, names, second, 2)
	want := map[string][]string{}
	for _, name := range names {
		want[name] = []string{workflows.SyncWorkflowID("default", name, 1), workflows.SyncWorkflowID("default", name, 2)}
	}
	if got := checkSyncs(t, jobs, prefix, names, want); got != 2*n {
		t.Errorf("%d syncs, want %d", got, 2*n)
	}

	// The cache refills: a worker skips a failed store for 10 s, so the
	// renders right after the failover stored nothing, and a pass at the
	// same commit reuses its ref. A hard refresh renders again: once the
	// worker tries the store again, the new commit's manifests (an entry
	// per path) are stored.
	var added map[string]bool
	eventually(t, 30*time.Second, time.Second, "the new commit's manifests in the cache", func() (bool, string) {
		if added = keysMinus(manifestKeys(t, r.client), before); len(added) >= n {
			return true, ""
		}
		for _, name := range names {
			if _, err := requestAt(ctx, fleet.api, session, http.MethodPost, "/api/v1/applications/"+name+"/refresh?hard=true", nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		return false, fmt.Sprintf("%d entries written after the kill", len(added))
	})
	on := 0
	for k := range nodeKeys(t, successor, "windlass:manifests:*") {
		if added[k] {
			on++
		}
	}
	t.Logf("%d manifest entries written after the kill, %d of them on %s", len(added), on, successor)
	if _, sharded := r.client.(*redis.ClusterClient); !sharded && on != len(added) {
		t.Errorf("%d of %d new manifest entries on the new primary %s", on, len(added), successor)
	}
	sc := redis.NewClient(&redis.Options{Addr: successor})
	defer sc.Close()
	if info, err := sc.Info(ctx, "replication").Result(); err != nil || !strings.Contains(info, "role:master") {
		t.Errorf("%s after the failover: %v %q; want a primary", successor, err, info)
	}
	// A new session is issued, and revoked, on the new primary.
	fresh := login()
	if _, err := requestAt(ctx, fleet.api, fresh, http.MethodDelete, "/api/v1/session", nil, nil); err != nil {
		t.Errorf("logout after the failover: %v", err)
	}
	if code, _, body := rawGet(t, fleet.api+probe, fresh); code != http.StatusUnauthorized {
		t.Errorf("session revoked after the failover: %d %s; want 401", code, body)
	}
	t.Logf("done %s after the start", since(start))
}

// startRedisFleet starts a server and a worker on the bed's Temporal with
// redisFlags, a task queue and a management namespace of their own (named
// prefix-mgmt, for cleanupNamespaces).
func startRedisFleet(t *testing.T, prefix string, redisFlags []string) ownFleet {
	t.Helper()
	return startOwnFleet(t, prefix, append([]string{"--temporal-address", bed.temporalAddr, "--kubeconfig", bed.env.Cluster.Kubeconfig,
		"--management-namespace", prefix + "-mgmt", "--task-queue", "windlass-" + prefix}, redisFlags...)...)
}

// allSyncedAt waits until every app is Synced and Healthy at sha, its
// syncs-th sync succeeded at sha, with no operation running.
func allSyncedAt(t *testing.T, names []string, sha string, syncs int) {
	t.Helper()
	eventually(t, 2*time.Minute, 500*time.Millisecond, fmt.Sprintf("every app synced at %.7s", sha), func() (bool, string) {
		var late []string
		for _, name := range names {
			v := appView(t, name)
			st := v.Status
			if st.Sync != appspec.SyncSynced || st.Health != appspec.HealthHealthy || st.SHA != sha || st.Operation != nil ||
				len(v.History) != syncs || v.History[0].Phase != workflows.PhaseSucceeded {
				late = append(late, fmt.Sprintf("%s %s/%s %.7s %v", name, st.Sync, st.Health, st.SHA, syncIDs(v)))
			}
		}
		return len(late) == 0, strings.Join(late, "; ")
	})
}

// waitReplicated waits until the replica of the primary at addr has
// everything the primary held a moment ago.
func waitReplicated(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	offset := func(info, key string) string {
		for line := range strings.SplitSeq(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, key); ok {
				return v
			}
		}
		return ""
	}
	info, err := c.Info(t.Context(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	var target int64
	if _, err := fmt.Sscan(offset(info, "master_repl_offset:"), &target); err != nil {
		t.Fatalf("master_repl_offset of %s: %v", addr, err)
	}
	eventually(t, 10*time.Second, 20*time.Millisecond, "the replica of "+addr+" to catch up", func() (bool, string) {
		info, err := c.Info(t.Context(), "replication").Result()
		if err != nil {
			return false, err.Error()
		}
		// slave0:ip=…,port=…,state=online,offset=N,lag=…
		var got int64
		for f := range strings.SplitSeq(offset(info, "slave0:"), ",") {
			if v, ok := strings.CutPrefix(f, "offset="); ok {
				_, _ = fmt.Sscan(v, &got)
			}
		}
		return got >= target, fmt.Sprintf("offset %d of %d", got, target)
	})
}

// manifestKeys lists the manifest cache's keys on every primary.
func manifestKeys(t *testing.T, c redis.UniversalClient) map[string]bool {
	t.Helper()
	const pattern = "windlass:manifests:*"
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return scanKeys(t, c.(*redis.Client), pattern)
	}
	out := map[string]bool{}
	var mu sync.Mutex
	err := cc.ForEachMaster(t.Context(), func(_ context.Context, n *redis.Client) error {
		keys := scanKeys(t, n, pattern)
		mu.Lock()
		defer mu.Unlock()
		maps.Copy(out, keys)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeKeys lists the keys matching pattern on the node at addr.
func nodeKeys(t *testing.T, addr, pattern string) map[string]bool {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	return scanKeys(t, c, pattern)
}

func scanKeys(t *testing.T, c *redis.Client, pattern string) map[string]bool {
	out := map[string]bool{}
	it := c.Scan(t.Context(), 0, pattern, 1000).Iterator()
	for it.Next(t.Context()) {
		out[it.Val()] = true
	}
	if err := it.Err(); err != nil {
		t.Errorf("scan %s: %v", c.Options().Addr, err)
	}
	return out
}

// keysMinus is a without the keys of b.
func keysMinus(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if !b[k] {
			out[k] = true
		}
	}
	return out
}
