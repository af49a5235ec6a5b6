package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/metrics"
	"github.com/windlass-cd/windlass/internal/probe"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/workflows"
)

// Names of the readiness checks.
const (
	checkTemporal = "temporal"
	checkRedis    = "redis"
	checkWorker   = "worker"
	checkKube     = "kubernetes"
)

// The checks of the kube-apiserver that holds the Secrets (one GET of
// /readyz) and of Temporal's database are each bounded by readyTimeout
// and reused for readyTTL, so that frequent probes stay cheap.
const (
	readyTimeout = 2 * time.Second
	readyTTL     = 5 * time.Second
)

// appsRefresh is how often windlass_apps is counted (a variable for
// tests).
var appsRefresh = 30 * time.Second

// readiness checks that Temporal and its database answer (temporalCheck)
// and that Redis pings; extra adds role checks.
func readiness(c client.Client, namespace string, rdb redis.UniversalClient, extra map[string]probe.Check) *probe.Probes {
	checks := map[string]probe.Check{
		checkTemporal: temporalCheck(c, namespace),
		checkRedis:    func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	}
	for n, ch := range extra {
		checks[n] = ch
	}
	return probe.New(checks)
}

// apiReadiness is the API's readiness: Temporal, Redis and the
// management cluster's API, where login and settings read their Secrets.
func apiReadiness(c client.Client, namespace string, rdb redis.UniversalClient, kcfg *rest.Config) (*probe.Probes, error) {
	kube, err := kubeCheck(kcfg)
	if err != nil {
		return nil, err
	}
	return readiness(c, namespace, rdb, map[string]probe.Check{checkKube: kube}), nil
}

// temporalCheck checks that the frontend answers (CheckHealth) and that
// Temporal's database does: a DescribeNamespace that is not weakly
// consistent reads the namespace from the persistence store, where the
// health check and the frontend's namespace cache answer without it.
func temporalCheck(c client.Client, namespace string) probe.Check {
	return probe.Cached(func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("frontend: %w", err)
		}
		if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
			return fmt.Errorf("database (namespace %s): %w", namespace, err)
		}
		return nil
	}, readyTTL)
}

// kubeCheck checks that the kube-apiserver of kcfg answers its /readyz.
func kubeCheck(kcfg *rest.Config) (probe.Check, error) {
	cfg := rest.CopyConfig(kcfg)
	cfg.Timeout = readyTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for readiness: %w", err)
	}
	return probe.Cached(func(ctx context.Context) error {
		if err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return fmt.Errorf("%w: %w", secretstore.ErrUnreachable, err)
		}
		return nil
	}, readyTTL), nil
}

const (
	msgOpsListening   = "serving metrics and probes"
	msgOpsFailed      = "metrics, probes or profiles listener failed"
	msgDebugListening = "serving profiles"
)

// serveOps serves /metrics, /healthz, /readyz and the Go profiles under
// /debug/pprof/ on addr until ctx ends.
func serveOps(ctx context.Context, log *slog.Logger, addr string, p *probe.Probes, m *metrics.Metrics) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	serveUntil(ctx, log, ln, probe.Handler(p, m.Handler(), debugHandler()))
	log.Info(msgOpsListening, "address", ln.Addr().String())
	return ln.Addr(), nil
}

// serveDebug serves only the Go profiles under /debug/pprof/ on addr until
// ctx ends: `windlass temporal`'s --debug-address, a process without
// metrics or probes of its own.
func serveDebug(ctx context.Context, log *slog.Logger, addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for profiles on %s: %w", addr, err)
	}
	serveUntil(ctx, log, ln, debugHandler())
	log.Info(msgDebugListening, "address", ln.Addr().String())
	return ln.Addr(), nil
}

// serveUntil serves h on ln until ctx ends, then shuts the server down,
// giving requests in flight 5 s.
func serveUntil(ctx context.Context, log *slog.Logger, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(msgOpsFailed, "address", ln.Addr().String(), "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
}

// debugHandler serves net/http/pprof's profiles under /debug/pprof/ (a
// CPU profile: /debug/pprof/profile?seconds=30). Only the separate
// --metrics-address listener serves it, never the API listener. The
// command line is left out: flags may carry secrets.
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// apiOps puts /metrics, /healthz and /readyz in front of the API handler
// h, serves them (and /debug/pprof/, which the API listener never serves)
// on --metrics-address too when it is set, and keeps windlass_apps counted
// until ctx ends.
func (p prodSettings) apiOps(ctx context.Context, log *slog.Logger, h http.Handler, probes *probe.Probes, m *metrics.Metrics, c client.Client, namespace string) (http.Handler, error) {
	if p.MetricsAddr != "" {
		if _, err := serveOps(ctx, log, p.MetricsAddr, probes, m); err != nil {
			return nil, err
		}
	}
	go m.WatchApps(ctx, c, appsQuery(namespace), appsRefresh, log)
	return probe.Handler(probes, m.Handler(), h), nil
}

var errWorkerStarting = errors.New("worker not started yet")

// workerOps serves the worker's /metrics, /healthz, /readyz and
// /debug/pprof/ on --metrics-address (none when it is empty) until ctx ends. Readiness
// waits for the returned flag, set once the worker polls.
func (p prodSettings) workerOps(ctx context.Context, log *slog.Logger, c client.Client, namespace, redisAddr string, kcfg *rest.Config, m *metrics.Metrics) (*atomic.Bool, error) {
	started := &atomic.Bool{}
	if p.MetricsAddr == "" {
		return started, nil
	}
	rdb, err := p.Redis.client(redisAddr)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { _ = rdb.Close() })
	probes, err := workerReadiness(c, namespace, rdb, kcfg, started)
	if err != nil {
		return nil, err
	}
	if _, err := serveOps(ctx, log, p.MetricsAddr, probes, m); err != nil {
		return nil, err
	}
	return started, nil
}

// workerReadiness is a worker's readiness: Temporal, Redis, the Kubernetes
// API of its kubeconfig (its settings and the in-cluster destination), and
// the worker polling (started).
func workerReadiness(c client.Client, namespace string, rdb redis.UniversalClient, kcfg *rest.Config, started *atomic.Bool) (*probe.Probes, error) {
	kube, err := kubeCheck(kcfg)
	if err != nil {
		return nil, err
	}
	return readiness(c, namespace, rdb, map[string]probe.Check{checkKube: kube, checkWorker: func(context.Context) error {
		if !started.Load() {
			return errWorkerStarting
		}
		return nil
	}}), nil
}

// syncInterceptor counts and times syncs by result.
func syncInterceptor() *metrics.SyncInterceptor {
	return &metrics.SyncInterceptor{WorkflowType: workflows.SyncWorkflowName, Classify: classifySync}
}

// classifySync maps a SyncWorkflow's error to its result.
func classifySync(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch app.Type() {
		case workflows.ErrTypeSyncFailed:
			return metrics.SyncFailed
		case workflows.ErrTypeSyncTerminated:
			return metrics.SyncTerminated
		}
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return metrics.SyncTerminated
	}
	return metrics.SyncError
}

// appsQuery counts the running applications by status.
func appsQuery(namespace string) metrics.AppsQuery {
	return metrics.AppsQuery{
		Namespace: namespace,
		Base:      fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.ApplicationWorkflowName),
		SyncAttr:  workflows.SearchAttrSync, HealthAttr: workflows.SearchAttrHealth,
		SyncValues: []string{string(appspec.SyncSynced), string(appspec.SyncOutOfSync), string(appspec.SyncUnknown)},
		HealthValues: []string{
			string(appspec.HealthHealthy), string(appspec.HealthProgressing), string(appspec.HealthDegraded),
			string(appspec.HealthSuspended), string(appspec.HealthMissing), string(appspec.HealthUnknown),
		},
	}
}
