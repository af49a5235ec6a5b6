// Package scaleout proves that Windlass runs as separate processes sharing
// one Temporal: a Temporal cluster of two `windlass temporal` processes on
// the test bed's PostgreSQL, one `windlass server` and two `windlass
// worker` processes, all on loopback against the test bed (kube-apiserver
// with kwok nodes, Redis, PostgreSQL, a Git server). Its tests kill workers with SIGKILL in the middle of syncs and
// of the cluster watch, and check that no sync is lost or run twice:
//
//   - TestKillWorkerDuringWaitWave: a worker dies while a sync waits on a
//     PreSync hook; a new worker finishes the same sync, with one hook Job.
//   - TestScaleOut: many apps created in a burst (WINDLASS_SCALE_APPS,
//     default 40; 200 for the recorded run); the worker holding the cluster
//     watch is killed halfway; every app ends Synced and Healthy with one
//     sync and one hook Job each, and drift made afterwards is still healed
//     by the watch, now on the surviving worker. It reports the time,
//     Temporal actions per sync and Redis memory per app.
//   - TestClusterTaskQueue: a registered cluster with a task queue has its
//     cluster activities (compare, plan, apply, wait, hooks, watch) run
//     only by the worker polling that queue; with that worker dead, its
//     apps wait while the others sync.
//   - TestKillTemporalDuringSyncs: the Temporal process that no client
//     dials is killed with SIGKILL in the middle of a fleet's syncs; its
//     shards move to the survivor, every app converges with exactly one
//     sync, and a new process joins the cluster again.
//   - TestPostgresOutage: PostgreSQL stops under a fleet's syncs; the API
//     answers 503 naming the engine, and every sync runs once when it is back.
//   - TestRedisSentinelFailoverUnderSyncs, TestRedisClusterFailoverUnderSyncs:
//     a server and a worker of their own on Redis Sentinel (then a Cluster
//     of three primaries); the primary is SIGKILLed as a fleet's first
//     syncs run. Sessions fail closed during the failover and are accepted
//     after it, a revocation holds, every sync runs once, and the manifest
//     cache fills again on the promoted replica.
//
// The tests only read the file system of the processes they start; the
// package itself has no non-test code.
package scaleout
