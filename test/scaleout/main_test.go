package scaleout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/test/bench/harness"
)

// bed is what the tests talk to: the processes, the test bed and clients.
var bed struct {
	env *testbed.Env
	tmp string
	bin string
	git *testbed.GitServer
	// temporalAddr is the standalone Temporal's frontend; temporal a
	// client of it, for reading histories.
	temporalAddr string
	temporal     client.Client
	kube         kubernetes.Interface
	// api is the base URL of the server process, token an admin session.
	api, token string
	// mgmtNS is the management namespace server and workers share.
	mgmtNS string

	// temporalProc and server are the Temporal (the one clients dial) and
	// API processes; temporalArgs start a member of that Temporal cluster.
	temporalProc, server *harness.Proc
	temporalArgs         []string
	// pgPassword is the database password, which no log may hold.
	pgPassword string

	mu      sync.Mutex
	workers []*harness.Proc
	started int
	// members are the Temporal processes beside temporalProc.
	members []*harness.Proc
}

// EnvBinary names a prebuilt windlass binary to use instead of building
// one (for quick reruns).
const EnvBinary = "WINDLASS_SCALE_BIN"

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) (code int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "scaleout setup:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "windlass-scaleout-")
	if err != nil {
		return fail(err)
	}
	bed.tmp = tmp
	defer func() {
		if code == 0 {
			_ = os.RemoveAll(tmp)
		} else {
			fmt.Fprintln(os.Stderr, "scaleout: process logs kept in", filepath.Join(tmp, "logs"))
		}
	}()
	env, cleanup, err := testbed.Shared(ctx, "scaleout")
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	bed.env = env
	if bed.kube, err = kubernetes.NewForConfig(env.Cluster.Config); err != nil {
		return fail(err)
	}
	if bed.git, err = testbed.StartGitServer(filepath.Join(tmp, "git")); err != nil {
		return fail(err)
	}
	defer bed.git.Close()

	bed.bin = os.Getenv(EnvBinary)
	if bed.bin == "" {
		bed.bin = filepath.Join(tmp, "windlass")
		build := exec.CommandContext(ctx, "go", "build", "-o", bed.bin, "github.com/windlass-cd/windlass/cmd/windlass")
		if out, err := build.CombinedOutput(); err != nil {
			return fail(fmt.Errorf("build windlass: %w\n%s", err, out))
		}
	}
	var procs []*harness.Proc
	defer func() {
		bed.mu.Lock()
		procs = append(procs, bed.members...)
		procs = append(procs, bed.workers...)
		bed.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop()
		}
	}()

	// Temporal: a cluster of two processes on PostgreSQL. Clients dial
	// the first; the second owns its share of the shards and queues.
	pg, pgCleanup, err := testbed.SharedPostgres(ctx, "scaleout")
	if err != nil {
		return fail(err)
	}
	defer pgCleanup()
	bed.pgPassword = pg.Password()
	bed.temporalArgs = []string{"temporal", "--postgres-dsn", pg.DSN(fmt.Sprintf("scaleout_%d", time.Now().UnixNano()%1e9)),
		"--postgres-password-file", pg.PasswordFile(), "--ui-address", "off", "--log-level", "warn",
		// One data dir for every member: the namespace's archive is shared.
		"--data-dir", filepath.Join(tmp, "temporal")}
	tp, err := startProc("temporal-1", append(bed.temporalArgs, "--address", "127.0.0.1:0")...)
	if err != nil {
		return fail(err)
	}
	procs = append(procs, tp)
	bed.temporalProc = tp
	if bed.temporalAddr, err = tp.WaitLine(ctx, "Frontend:"); err != nil {
		return fail(err)
	}
	if _, err := startTemporalMember(ctx); err != nil {
		return fail(err)
	}
	if bed.temporal, err = temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: bed.temporalAddr, Namespace: "default"}); err != nil {
		return fail(err)
	}
	defer bed.temporal.Close()

	bed.mgmtNS = fmt.Sprintf("windlass-scale-%d", time.Now().UnixNano()%1e9)
	sp, err := startProc("server", "server", "--api-address", "127.0.0.1:0", "--redis-address", env.RedisAddr,
		"--kubeconfig", env.Cluster.Kubeconfig, "--temporal-address", bed.temporalAddr, "--management-namespace", bed.mgmtNS)
	if err != nil {
		return fail(err)
	}
	procs = append(procs, sp)
	bed.server = sp
	addr, err := sp.LogValue(ctx, `msg="windlass is ready"`, "api")
	if err != nil {
		return fail(err)
	}
	bed.api = "http://" + addr
	password, err := sp.WaitLine(ctx, "initial admin password (shown once, stored hashed):")
	if err != nil {
		return fail(err)
	}
	if bed.token, err = login(ctx, password); err != nil {
		return fail(err)
	}
	for range 2 {
		if _, err := startWorker(ctx); err != nil {
			return fail(err)
		}
	}
	return m.Run()
}

// startTemporalMember starts one more Temporal process in the cluster,
// serving every service with a frontend of its own, and waits until it
// serves.
func startTemporalMember(ctx context.Context) (*harness.Proc, error) {
	bed.mu.Lock()
	name := "temporal-" + strconv.Itoa(len(bed.members)+2)
	bed.mu.Unlock()
	p, err := startProc(name, append(bed.temporalArgs, "--address", "127.0.0.1:0")...)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitLine(ctx, "Frontend:"); err != nil {
		p.Stop()
		return nil, err
	}
	bed.mu.Lock()
	bed.members = append(bed.members, p)
	bed.mu.Unlock()
	return p, nil
}

// startWorker starts one more worker process and waits until it polls.
// startProc runs the windlass binary with args, its log in the bed's logs
// directory; the process dies with the test binary.
func startProc(name string, args ...string) (*harness.Proc, error) {
	return harness.StartProc(filepath.Join(bed.tmp, "logs"), bed.bin, name, nil, args...)
}

func startWorker(ctx context.Context, extra ...string) (*harness.Proc, error) {
	bed.mu.Lock()
	bed.started++
	name := "worker-" + strconv.Itoa(bed.started)
	bed.mu.Unlock()
	args := append([]string{"worker", "--temporal-address", bed.temporalAddr, "--redis-address", bed.env.RedisAddr,
		"--kubeconfig", bed.env.Cluster.Kubeconfig, "--cache-dir", filepath.Join(bed.tmp, name),
		"--management-namespace", bed.mgmtNS, "--metrics-address", "127.0.0.1:0",
		// No sweep: drift must be healed by the cluster watch alone.
		"--self-heal-sweep=-1s"}, extra...)
	p, err := startProc(name, args...)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitLine(ctx, `msg="windlass is ready"`); err != nil {
		p.Stop()
		return nil, err
	}
	bed.mu.Lock()
	bed.workers = append(bed.workers, p)
	bed.mu.Unlock()
	return p, nil
}

// ownFleet is a server and a worker that a test starts for itself: the
// server's API and its initial admin password.
// ownFleet is a server and worker of a test's own: the API's URL, the
// admin's password and the worker's metrics and probes address.
type ownFleet struct{ api, password, workerMetrics string }

// startOwnFleet starts name-server and name-worker, both with args (the
// Temporal, Redis and management namespace to use), and waits until they
// are ready; they stop with the test.
func startOwnFleet(t *testing.T, name string, args ...string) ownFleet {
	t.Helper()
	ctx := t.Context()
	sp, err := startProc(name+"-server", append([]string{"server", "--api-address", "127.0.0.1:0"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Stop)
	addr, err := sp.LogValue(ctx, `msg="windlass is ready"`, "api")
	if err != nil {
		t.Fatal(err)
	}
	password, err := sp.WaitLine(ctx, "initial admin password (shown once, stored hashed):")
	if err != nil {
		t.Fatal(err)
	}
	wp, err := startProc(name+"-worker", append([]string{"worker", "--cache-dir", filepath.Join(t.TempDir(), "cache"),
		"--metrics-address", "127.0.0.1:0", "--self-heal-sweep=-1s"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wp.Stop)
	metrics, err := wp.LogValue(ctx, `msg="serving metrics and probes"`, "address")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wp.WaitLine(ctx, `msg="windlass is ready"`); err != nil {
		t.Fatal(err)
	}
	return ownFleet{api: "http://" + addr, password: password, workerMetrics: metrics}
}

// workerByIdentity finds the running worker of a Temporal worker identity
// (the SDK's default is "<pid>@<host>@").
func workerByIdentity(identity string) *harness.Proc {
	pid, _, _ := strings.Cut(identity, "@")
	bed.mu.Lock()
	defer bed.mu.Unlock()
	for _, w := range bed.workers {
		if strconv.Itoa(w.PID()) == pid {
			return w
		}
	}
	return nil
}

// killWorker kills w with SIGKILL and forgets it.
func killWorker(w *harness.Proc) {
	w.Kill()
	bed.mu.Lock()
	defer bed.mu.Unlock()
	for i, x := range bed.workers {
		if x == w {
			bed.workers = append(bed.workers[:i], bed.workers[i+1:]...)
			break
		}
	}
}

func login(ctx context.Context, password string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	code, err := request(ctx, "", http.MethodPost, "/api/v1/session", map[string]string{"username": "admin", "password": password}, &out)
	if err != nil || code != http.StatusOK || out.Token == "" {
		return "", fmt.Errorf("login: status %d: %v", code, err)
	}
	return out.Token, nil
}

// request calls the API and decodes the JSON answer into out (if not nil).
func request(ctx context.Context, token, method, path string, body, out any) (int, error) {
	return requestAt(ctx, bed.api, token, method, path, body, out)
}

// requestAt is request to the API at base.
func requestAt(ctx context.Context, base, token, method, path string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(data) > 0 && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %q: %w", method, path, data, err)
		}
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, nil
}

// call is request as admin that fails the test on an error.
func call(t *testing.T, method, path string, body, out any) {
	t.Helper()
	if _, err := request(t.Context(), bed.token, method, path, body, out); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every interval until it holds or timeout passes.
func eventually(t *testing.T, timeout, interval time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("waiting for %s: %v", what, t.Context().Err())
		case <-time.After(interval):
		}
	}
}
