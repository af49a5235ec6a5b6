// Package testbed starts real servers for Windlass's tests and for
// `make cluster-up`: a Kubernetes control plane with fake nodes, Redis,
// PostgreSQL, and a git smart-HTTP server for fixture repositories. Nothing here is a fake of
// the servers' APIs; only the kubelets are simulated (by kwok).
//
// # Kubernetes
//
// StartCluster runs etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok from the binaries that `make testbed`
// (hack/testbed/build.sh) builds into bin/testbed. It needs no network
// beyond loopback and no root. The contract:
//
//   - Binaries come from ClusterOptions.BinDir, else $WINDLASS_TESTBED_BIN,
//     else <repo root>/bin/testbed (the repo root is the first directory
//     with a go.mod above the working directory). A missing binary is an
//     error that says to run `make testbed`.
//   - Everything lives in the state dir (ClusterOptions.Dir): pki/ (an
//     ECDSA PKI made in Go on every start), etcd/, logs/<component>.log,
//     the kubeconfigs (admin.kubeconfig is a system:masters client) and
//     pids. Earlier state there is wiped on start; logs stay after Stop.
//   - Every server listens on 127.0.0.1 on a port picked at random, so
//     clusters in parallel test binaries do not collide (a start that loses
//     a port race is retried with new ports).
//   - Processes run detached in their own session and outlive the caller.
//     Each is recorded as "<executable basename> <pid>" in <dir>/pids.
//     Cluster.Stop and StopDir stop them in reverse order (SIGTERM, SIGKILL
//     after 5 s), signalling a PID only while /proc/<pid>/exe still has the
//     recorded basename, then remove the pids file. A test process killed
//     hard (say by `go test -timeout`) leaks them: run `hack/cluster down`
//     on the dir, or stop the pids listed in it.
//   - StartCluster returns when kube-apiserver is ready, the controller
//     manager and scheduler are healthy, all kwok nodes are Ready and the
//     default ServiceAccount exists. That took 4.7-6.5 s on a busy two-core machine.
//     On failure it stops what it started and the error carries the tail
//     of the failing component's log.
//   - The API server authorises with RBAC and runs with
//     --endpoint-reconciler-type=none. Pods are scheduled onto kwok nodes
//     and become Ready without running; pods owned by Jobs succeed at once;
//     there is no exec and there are no probes. Logs are simulated: kwok
//     serves a file as a pod's log (SimulatePodLogs, AppendCRILog).
//   - LoadCluster attaches to a cluster that runs in a dir (for example one
//     started by `go run ./hack/cluster up --dir DIR`).
//
// # Redis
//
// StartRedis runs redis-server (Debian package redis-server, installed by
// `make deps`) on a free loopback port without persistence, detached and
// recorded in <dir>/pids like the cluster, with its address in
// <dir>/redis.addr.
//
// StartRedisSentinel runs a primary, a replica and three sentinels
// (redis-server --sentinel) the same way, for failover tests: Primary asks
// the sentinels for the primary, and Kill SIGKILLs a node.
//
// # PostgreSQL
//
// StartPostgres runs initdb in <dir>/data and then postgres (Debian package
// postgresql; its binaries are found on PATH or in
// /usr/lib/postgresql/<version>/bin) on a free loopback port, TCP only, with
// scram-sha-256 logins for PostgresUser and a random password in
// <dir>/postgres.password. As root it runs them as the user postgres (or
// nobody). Stop is a fast shutdown and Start brings the same data back at
// the same address, for outage tests. SharedPostgres hands a test binary
// the server of $WINDLASS_TEST_POSTGRES_DIR (make test starts one with
// hack/cluster postgres-up) or a private one.
//
// Servers started here do not inherit the caller's descriptors above
// stderr (such as a `flock` lock).
//
// # Git
//
// StartGitServer serves bare repositories under a root directory from the
// test process, through `git http-backend` (CGI), with receive-pack enabled
// for every repository and optional basic auth. WorkRepo writes fixture
// commits with go-git and pushes them to it over HTTP.
//
// # Sharing across packages
//
// Shared gives a test binary a cluster and a Redis address. When
// $WINDLASS_TEST_CLUSTER_DIR names the dir of a running cluster (make test
// starts one with hack/cluster up and exports it), that cluster is used and
// left running; otherwise a private cluster is started in a temporary dir
// and the returned cleanup stops it. $WINDLASS_TEST_REDIS_ADDR works the
// same way for Redis. Call Shared once, from TestMain:
//
//	func TestMain(m *testing.M) {
//		env, cleanup, err := testbed.Shared(context.Background(), "mypkg")
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		testEnv = env
//		code := m.Run()
//		cleanup()
//		os.Exit(code)
//	}
//
// Tests that share a cluster must not assume they are alone in it: create
// objects in a namespace of their own, with unique names.
package testbed
