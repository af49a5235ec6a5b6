// Command bench is Windlass's benchmark harness (issue 8), run by `make
// bench` (hack/bench.sh). It starts its own test bed (kube-apiserver with
// enough kwok nodes, Redis, a Git server), builds the windlass binary and
// runs a standalone `windlass temporal`, one `windlass server` and one
// `windlass worker` as processes, then runs the benchmarks B1-B8 of
// docs/benchmarks.md; with -temporal, once per Temporal variant (SQLite,
// one or two processes on PostgreSQL), each on a fresh test bed. Each figure is printed as `BENCH <name> <value>
// <unit>`; everything, each run included, goes to bench-results.json with
// the machine, commit, date and load average. With -profile, 30 s CPU
// profiles of the worker and of the Temporal server are taken during the
// first run of each B1 size (from /debug/pprof/ on the worker's metrics
// listener and on `windlass temporal`'s --debug-address) and their top
// functions are printed.
//
// It is a program, not a test: `go test ./...` never runs it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/test/bench/harness"
)

// config is the command line.
type config struct {
	apps       []int
	runs       int
	iterations int
	only       map[string]bool
	out        string
	// bin is the production build (server, worker), fullBin the full
	// one (temporal); empty: go build them.
	bin, fullBin string
	keep         bool
	renderPkg    string
	// B6: apps registered, and timed requests of each page.
	listApps, listSamples int
	// B4: apps, how long they idle, and the wait before measuring.
	idleApps            int
	idleFor, idleSettle time.Duration
	// profile takes CPU profiles of the worker and Temporal during B1 and
	// of the worker in B4, into profileDir.
	profile    bool
	profileDir string
	// histories, when set, is where B1, B2 and B3 write the histories of
	// one app's workflow and its latest sync (JSON), to read them event by
	// event.
	histories string
	// temporal is the Temporal variants the suite runs on, one after the
	// other, each on a fresh test bed.
	temporal []variant
	// B8: apps of the burst, and how long they idle after it.
	b8Apps int
	b8Idle time.Duration
}

func main() {
	var cfg config
	var apps, only string
	flag.StringVar(&apps, "apps", "100,500,1000", "B1 fleet sizes, comma-separated")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of each B1 size (the median is reported)")
	flag.IntVar(&cfg.iterations, "iterations", 20, "iterations of B2 and B3")
	var temporal string
	flag.StringVar(&only, "only", "B1,B1-shared,B1-set,B2,B3,B4,B5,B6,B7", "benchmarks to run, comma-separated (B8 only when named)")
	flag.StringVar(&temporal, "temporal", "sqlite", "Temporal variants to run the suite on, comma-separated: sqlite, pg1 (one `windlass temporal --postgres-dsn`), pg2 (two)")
	flag.IntVar(&cfg.b8Apps, "b8-apps", 10000, "B8: apps of the burst")
	flag.DurationVar(&cfg.b8Idle, "b8-idle-duration", 10*time.Minute, "B8: how long the fleet idles after the burst while measured")
	flag.StringVar(&cfg.out, "out", "bench-results.json", "results file (JSON)")
	flag.StringVar(&cfg.bin, "bin", "", "prebuilt production build of windlass, -tags "+productionTags+", for the server and the worker (default: go build one)")
	flag.StringVar(&cfg.fullBin, "full-bin", "", "prebuilt full build of windlass, for `windlass temporal` (default: go build one)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (logs) even on success")
	flag.StringVar(&cfg.renderPkg, "render-pkg", "./activities/render/", "package of BenchmarkRender (B5)")
	flag.IntVar(&cfg.listApps, "list-apps", 10000, "B6: applications registered before the list is timed")
	flag.IntVar(&cfg.listSamples, "list-samples", 30, "B6: timed requests of the first and of the next page each")
	flag.IntVar(&cfg.idleApps, "idle-apps", 1000, "B4: synced applications in the idle fleet")
	flag.DurationVar(&cfg.idleFor, "idle-duration", 10*time.Minute, "B4: how long the fleet idles while measured")
	flag.DurationVar(&cfg.idleSettle, "idle-settle", time.Minute, "B4: wait between the fleet being ready and the measurement")
	flag.BoolVar(&cfg.profile, "profile", false, "take 30 s CPU profiles of the worker and the Temporal server during the first run of each B1 size, the worker's over B4's first 200 s, and a heap profile of the worker at the end of B4")
	flag.StringVar(&cfg.profileDir, "profile-dir", ".cache/bench", "where -profile writes the profiles")
	flag.StringVar(&cfg.histories, "histories", "", "B1, B2, B3: write the histories of one app's workflow and its latest sync (JSON) into this directory, and B1-set its set's")
	flag.Parse()
	for f := range strings.SplitSeq(apps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -apps %q: want positive numbers separated by commas\n", apps)
			os.Exit(2)
		}
		cfg.apps = append(cfg.apps, n)
	}
	cfg.only = map[string]bool{}
	for f := range strings.SplitSeq(only, ",") {
		cfg.only[strings.ToUpper(strings.TrimSpace(f))] = true
	}
	var err error
	if cfg.temporal, err = parseVariants(temporal); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -temporal:", err)
		os.Exit(2)
	}
	if cfg.runs < 1 || cfg.iterations < 1 || cfg.listApps < 1 || cfg.listSamples < 1 || cfg.idleApps < 1 || cfg.b8Apps < 1 ||
		cfg.idleFor < time.Minute || cfg.b8Idle < time.Minute {
		fmt.Fprintln(os.Stderr, "bench: -runs, -iterations, -list-apps, -list-samples, -idle-apps and -b8-apps must be at least 1, -idle-duration and -b8-idle-duration at least 1m")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// results is bench-results.json.
type results struct {
	Date       string           `json:"date"`
	Commit     string           `json:"commit"`
	Machine    machine          `json:"machine"`
	LoadBefore string           `json:"loadAverageBefore"`
	LoadAfter  string           `json:"loadAverageAfter"`
	Figures    []figure         `json:"figures"`
	Runs       map[string][]any `json:"runs"`
	Notes      []string         `json:"notes,omitempty"`
	// variant is the Temporal variant now running; emit and addRun put it
	// into the names of figures and runs ("" for sqlite).
	variant variant
}

type machine struct {
	NProc     int    `json:"nproc"`
	MemoryMiB int64  `json:"memoryMiB"`
	CPU       string `json:"cpu"`
	Go        string `json:"go"`
	OS        string `json:"os"`
}

type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Runs is how many runs the value is the median of.
	Runs int `json:"runs,omitempty"`
}

// label puts the running Temporal variant after the benchmark's name:
// B1.N100.seconds becomes B1.pg2.N100.seconds; on SQLite it stays.
func (r *results) label(name string) string {
	if r.variant == sqlite {
		return name
	}
	bench, rest, _ := strings.Cut(name, ".")
	return strings.TrimSuffix(bench+"."+string(r.variant)+"."+rest, ".")
}

// emit prints and records one figure.
func (r *results) emit(name string, value float64, unit string, runs int) {
	name = r.label(name)
	fmt.Printf("BENCH %s %s %s\n", name, strconv.FormatFloat(value, 'g', 5, 64), unit)
	r.Figures = append(r.Figures, figure{Name: name, Value: value, Unit: unit, Runs: runs})
}

func (r *results) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if r.variant != sqlite {
		s = "[" + string(r.variant) + "] " + s
	}
	fmt.Println("# " + s)
	r.Notes = append(r.Notes, s)
}

func (r *results) addRun(id string, run any) { r.Runs[r.label(id)] = append(r.Runs[r.label(id)], run) }

// median of xs (not sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the nearest-rank percentile p (0-100) of xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func describeMachine() machine {
	m := machine{NProc: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.MemoryMiB = kb / 1024
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return m
}

// env is the running test bed and Windlass processes.
type env struct {
	tmp string
	// bin runs the server and the worker, fullBin the Temporal server: the
	// image's windlass and windlass-full.
	bin, fullBin string
	cluster      *testbed.Cluster
	redisAddr    string
	git          *testbed.GitServer
	temporalAddr string
	tc           client.Client
	kube         kubernetes.Interface
	api, token   string
	// webhookSecret signs B2's GitHub pushes (the server reads it from
	// WINDLASS_WEBHOOK_GITHUB_SECRET).
	webhookSecret string
	mgmtNS        string
	// procs: temporal (the first of temporals, which clients dial),
	// server, worker.
	temporal, server, worker *harness.Proc
	temporals                []*harness.Proc
	// variant is how Temporal runs; temporalData is its SQLite data dir,
	// postgres its PostgreSQL (pg1, pg2) and postgresPID the postmaster's.
	variant      variant
	temporalData string
	postgres     *testbed.Postgres
	postgresPID  int
	// adminPassword logs the browser in (B8); repos are the repositories
	// made so far by name, reused by later runs.
	adminPassword string
	repos         map[string]string
	// workerOps is the worker's metrics listener (/metrics, /debug/pprof/),
	// temporalDebug the Temporal server's profiles listener.
	workerOps, temporalDebug string
	// bed is the test bed's processes (etcd, the API server, the
	// controllers, kwok, Redis), whose CPU time B1 reads.
	bed []testbed.Process
	// tearingDown is the namespaces deleteAll deleted that B1 waits to
	// be gone before its next run.
	tearingDown []string
}

func run(ctx context.Context, cfg config) (err error) {
	res := &results{Date: time.Now().UTC().Format(time.RFC3339), Machine: describeMachine(),
		LoadBefore: loadAverage(), Runs: map[string][]any{}}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		res.Commit = strings.TrimSpace(string(out))
	}
	fmt.Printf("# bench: %s, commit %s, %d cores, %d MiB, %s, load average %s\n",
		res.Date, res.Commit, res.Machine.NProc, res.Machine.MemoryMiB, res.Machine.Go, res.LoadBefore)
	defer func() {
		res.LoadAfter = loadAverage()
		js, jerr := json.MarshalIndent(res, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(cfg.out, append(js, '\n'), 0o644)
		}
		if jerr != nil && err == nil {
			err = fmt.Errorf("write %s: %w", cfg.out, jerr)
		}
		fmt.Printf("# bench: results in %s (load average after: %s)\n", cfg.out, res.LoadAfter)
	}()

	stack := false
	for _, b := range []string{"B1", "B1-SHARED", "B1-SET", "B2", "B3", "B4", "B6", "B7", "B8"} {
		stack = stack || cfg.only[b]
	}
	if !stack {
		if cfg.only["B5"] {
			if err := benchRender(ctx, res, cfg.renderPkg, ""); err != nil {
				return fmt.Errorf("B5: %w", err)
			}
		}
		return nil
	}
	tmp, err := os.MkdirTemp("", "windlass-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cfg.bin, err = buildWindlass(ctx, cfg.bin, filepath.Join(tmp, "windlass"), productionTags); err != nil {
		return err
	}
	if cfg.fullBin, err = buildWindlass(ctx, cfg.fullBin, filepath.Join(tmp, "windlass-full"), ""); err != nil {
		return err
	}
	for i, v := range cfg.temporal {
		res.variant = v
		if err := runSuite(ctx, cfg, res, v, i == 0); err != nil {
			return err
		}
	}
	res.variant = sqlite
	return nil
}

// runSuite runs the selected benchmarks on a fresh test bed with Temporal
// variant v; B5, which needs no Temporal, only when first.
func runSuite(ctx context.Context, cfg config, res *results, v variant, first bool) error {
	e, cleanup, err := start(ctx, cfg, v)
	if err != nil {
		return err
	}
	defer cleanup()
	res.note("suite on Temporal %s (%s)", v, v.describe())
	if cfg.only["B2"] {
		if err := benchPushToLive(ctx, e, res, cfg.iterations, cfg.histories); err != nil {
			return fmt.Errorf("B2: %w", err)
		}
	}
	if cfg.only["B3"] {
		if err := benchDriftToHealed(ctx, e, res, cfg.iterations, cfg.histories); err != nil {
			return fmt.Errorf("B3: %w", err)
		}
	}
	// B4 takes over the last B1 fleet when it has B4's size: the B1
	// workload (a directory per app) runs last at each size. B1-shared
	// and B1-set, B1's comparisons, run at the largest size only.
	var kept *fleet
	for i, n := range cfg.apps {
		for _, w := range []workload{sharedDir, appSet, dirPerApp} {
			if !cfg.only[strings.ToUpper(w.String())] || (w != dirPerApp && n != slices.Max(cfg.apps)) {
				continue
			}
			keep := w == dirPerApp && cfg.only["B4"] && i == len(cfg.apps)-1 && n == cfg.idleApps
			if kept, err = benchFleetSync(ctx, e, res, cfg, w, n, keep); err != nil {
				return fmt.Errorf("%s N=%d: %w", w, n, err)
			}
		}
		compareFleets(res, n)
	}
	if cfg.only["B4"] {
		if err := benchIdleFleet(ctx, e, res, cfg, kept); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// Like a B1 fleet that does not converge: a result.
			fmt.Println("BENCH " + res.label("B4") + " failed")
			res.note("B4 failed: %v", err)
		}
	}
	if cfg.only["B7"] {
		if err := benchBigApp(ctx, e, res); err != nil {
			fmt.Println("BENCH " + res.label("B7") + " failed")
			res.note("B7 failed: %v", err)
		}
	}
	if cfg.only["B5"] && first {
		if err := benchRender(ctx, res, cfg.renderPkg, e.redisAddr); err != nil {
			return fmt.Errorf("B5: %w", err)
		}
	}
	// Last: their apps stay until the processes stop.
	if cfg.only["B6"] {
		if err := benchList(ctx, e, res, cfg.listApps, cfg.listSamples); err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Println("BENCH " + res.label("B6") + " failed")
			res.note("B6 failed: %v", err)
		}
	}
	if cfg.only["B8"] {
		if err := benchTenThousand(ctx, e, res, cfg); err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Println("BENCH " + res.label("B8") + " failed")
			res.note("B8 failed: %v", err)
		}
	}
	return nil
}

// bedCPUSeconds is the CPU time so far of each of the test bed's
// processes by name, and of this harness with the children it waited for
// ("harness": the Git server's git http-backend, its git commands).
func (e *env) bedCPUSeconds() map[string]float64 {
	out := map[string]float64{harnessName: harness.PIDCPUSeconds(os.Getpid(), true)}
	for _, p := range e.bed {
		out[p.Name] += harness.PIDCPUSeconds(p.PID, false)
	}
	return out
}

// harnessName is bedCPUSeconds' key for the harness itself.
const harnessName = "harness"

// cpuSeconds is the CPU time so far of the server, the worker and
// Temporal (every process), in that order.
func (e *env) cpuSeconds() [3]float64 {
	var temporal float64
	for _, t := range e.temporalCPUSeconds() {
		temporal += t
	}
	return [3]float64{e.server.CPUSeconds(), e.worker.CPUSeconds(), temporal}
}

// temporalCPUSeconds is the CPU time so far of each Temporal process.
func (e *env) temporalCPUSeconds() []float64 {
	out := make([]float64, len(e.temporals))
	for i, t := range e.temporals {
		out[i] = t.CPUSeconds()
	}
	return out
}

// start brings up the test bed and the Windlass processes. cleanup stops
// them all and removes the temporary directory unless something failed
// or -keep was given.
func start(ctx context.Context, cfg config, v variant) (_ *env, cleanup func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "windlass-bench-")
	if err != nil {
		return nil, nil, err
	}
	e := &env{tmp: tmp, mgmtNS: "windlass-bench", bin: cfg.bin, fullBin: cfg.fullBin, repos: map[string]string{}}
	var stops []func()
	// stopAll, not the named result, which a failed return sets to nil.
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		if cfg.keep {
			fmt.Println("# bench: logs kept in", tmp)
		} else {
			_ = os.RemoveAll(tmp)
		}
	}
	defer func() {
		if err != nil {
			cfg.keep = true
			stopAll()
		}
	}()
	// Each kwok node holds 110 pods: room for the largest fleet, plus the
	// B2/B3 apps. B6's apps have no pods.
	maxApps := 0
	for _, n := range cfg.apps {
		if cfg.only["B1"] || cfg.only["B1-SHARED"] || cfg.only["B1-SET"] {
			maxApps = max(maxApps, n)
		}
	}
	if cfg.only["B4"] {
		maxApps = max(maxApps, cfg.idleApps)
	}
	if cfg.only["B8"] {
		maxApps = max(maxApps, cfg.b8Apps)
	}
	nodes := 2 + maxApps/100
	slog.Info("starting the test bed", "nodes", nodes, "dir", tmp)
	e.cluster, err = testbed.StartCluster(ctx, testbed.ClusterOptions{Dir: filepath.Join(tmp, "cluster"), Nodes: nodes})
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() { _ = e.cluster.Stop() })
	rds, err := testbed.StartRedis(ctx, filepath.Join(tmp, "redis"))
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() { _ = rds.Stop() })
	e.redisAddr = rds.Addr()
	for _, dir := range []string{e.cluster.Dir, filepath.Join(tmp, "redis")} {
		procs, err := testbed.Processes(dir)
		if err != nil {
			return nil, nil, err
		}
		e.bed = append(e.bed, procs...)
	}
	for i := range e.bed {
		// Debian's redis-server is a link to redis-check-rdb, the name
		// its pid is recorded under.
		if e.bed[i].Name == "redis-check-rdb" {
			e.bed[i].Name = "redis-server"
		}
	}
	if e.kube, err = kubernetes.NewForConfig(e.cluster.Config); err != nil {
		return nil, nil, err
	}
	if e.git, err = testbed.StartGitServer(filepath.Join(tmp, "git")); err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() { _ = e.git.Close() })

	logs := filepath.Join(tmp, "logs")
	temporalStop, err := e.startTemporal(ctx, v, logs)
	stops = append(stops, temporalStop)
	if err != nil {
		return nil, nil, err
	}
	if e.tc, err = temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: e.temporalAddr, Namespace: "default"}); err != nil {
		return nil, nil, err
	}
	stops = append(stops, e.tc.Close)

	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	e.webhookSecret = hex.EncodeToString(secret)
	if e.server, err = harness.StartProc(logs, e.bin, "server", []string{"WINDLASS_WEBHOOK_GITHUB_SECRET=" + e.webhookSecret},
		"server", "--api-address", "127.0.0.1:0", "--redis-address", e.redisAddr,
		"--kubeconfig", e.cluster.Kubeconfig, "--temporal-address", e.temporalAddr, "--management-namespace", e.mgmtNS); err != nil {
		return nil, nil, err
	}
	stops = append(stops, e.server.Stop)
	addr, err := e.server.LogValue(ctx, `msg="windlass is ready"`, "api")
	if err != nil {
		return nil, nil, err
	}
	e.api = "http://" + addr
	password, err := e.server.WaitLine(ctx, "initial admin password (shown once, stored hashed):")
	if err != nil {
		return nil, nil, err
	}
	e.adminPassword = password
	if e.token, err = e.login(ctx, password); err != nil {
		return nil, nil, err
	}
	if e.worker, err = harness.StartProc(logs, e.bin, "worker", nil, "worker", "--temporal-address", e.temporalAddr,
		"--redis-address", e.redisAddr, "--kubeconfig", e.cluster.Kubeconfig, "--cache-dir", filepath.Join(tmp, "worker-cache"),
		"--management-namespace", e.mgmtNS, "--metrics-address", "127.0.0.1:0"); err != nil {
		return nil, nil, err
	}
	stops = append(stops, e.worker.Stop)
	if e.workerOps, err = e.worker.LogValue(ctx, `msg="serving metrics and probes"`, "address"); err != nil {
		return nil, nil, err
	}
	if _, err := e.worker.WaitLine(ctx, `msg="windlass is ready"`); err != nil {
		return nil, nil, err
	}
	slog.Info("windlass is running", "api", e.api, "temporal", e.temporalAddr)
	return e, stopAll, nil
}

// productionTags are the build tags of the image's windlass, which runs
// the server and the worker: without the embedded Temporal server (see
// deploy/docker/Dockerfile).
const productionTags = "nodevserver"

// buildWindlass returns prebuilt when set, else builds ./cmd/windlass with
// tags into out.
func buildWindlass(ctx context.Context, prebuilt, out, tags string) (string, error) {
	if prebuilt != "" {
		return prebuilt, nil
	}
	slog.Info("building windlass", "tags", tags, "out", out)
	out, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	build := exec.CommandContext(ctx, "go", "build", "-tags", tags, "-o", out, "github.com/windlass-cd/windlass/cmd/windlass")
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build windlass (tags %q): %w\n%s", tags, err, msg)
	}
	return out, nil
}
