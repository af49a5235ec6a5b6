package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/workflows"
)

const (
	msgStarting     = "starting"
	msgReady        = "windlass is ready"
	msgShuttingDown = "shutting down"
)

func runDev(ctx context.Context, cfg devConfig) error {
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	kcfg, err := kube.LoadConfig(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("no cluster to deploy to (set KUBECONFIG, or use make run, which starts a local one): %w", err)
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	cleanup := []func(){}
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()

	redisAddr := cfg.RedisAddr
	if redisAddr == "" {
		log.Info(msgStarting, "component", "redis")
		dir := filepath.Join(dataDir, "redis")
		_ = testbed.StopDir(dir) // a server left behind by a killed run
		r, err := testbed.StartRedis(ctx, dir)
		if err != nil {
			return fmt.Errorf("start embedded redis: %w", err)
		}
		cleanup = append(cleanup, func() { _ = r.Stop() })
		redisAddr = r.Addr()
	}

	log.Info(msgStarting, "component", "temporal")
	dev, err := temporalx.StartDevServer(ctx, temporalx.DevServerConfig{
		DataDir: filepath.Join(dataDir, "temporal"), Namespace: cfg.Namespace,
		FrontendAddr: cfg.TemporalAddr, UIAddr: cfg.UIAddr,
		SearchAttributes: worker.SearchAttributes(), Logger: log,
	})
	if err != nil {
		return fmt.Errorf("start embedded temporal: %w", err)
	}
	cleanup = append(cleanup, func() { _ = dev.Stop() })

	c, err := temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: dev.FrontendAddr(), Namespace: cfg.Namespace, Logger: log})
	if err != nil {
		return err
	}
	cleanup = append(cleanup, c.Close)

	cfg.workerSettings.namespace = cfg.Namespace
	stopWorker, err := startWorker(ctx, log, c, cfg.workerSettings, redisAddr, cfg.Kubeconfig)
	if err != nil {
		return err
	}
	cleanup = append(cleanup, stopWorker)

	srv, ln, err := listenAPI(log, c, cfg.APIAddr, cfg.Namespace, cfg.RefreshSeconds)
	if err != nil {
		return err
	}
	fmt.Printf("\nWindlass is running.\n  REST API:     http://%s/api/v1/applications\n  Temporal UI:  %s\n  Temporal:     %s (namespace %s)\n  Cluster:      %s\n  Data dir:     %s\nPress Ctrl-C to stop.\n\n",
		ln.Addr(), orNone(dev.UIURL()), dev.FrontendAddr(), cfg.Namespace, kcfg.Host, dataDir)
	log.Info(msgReady, "api", ln.Addr().String(), "temporal_ui", dev.UIURL())
	return serve(ctx, log, srv, ln)
}

func orNone(s string) string {
	if s == "" {
		return "(off)"
	}
	return s
}

// connect makes the logger and dials the external Temporal of a
// production role.
func connect(ctx context.Context, cfg common) (*slog.Logger, client.Client, error) {
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return nil, nil, err
	}
	c, err := temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: cfg.TemporalAddr, Namespace: cfg.Namespace, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return log, c, nil
}

func runServer(ctx context.Context, cfg serverConfig) error {
	log, c, err := connect(ctx, cfg.common)
	if err != nil {
		return err
	}
	defer c.Close()
	srv, ln, err := listenAPI(log, c, cfg.APIAddr, cfg.Namespace, 0)
	if err != nil {
		return err
	}
	log.Info(msgReady, "api", ln.Addr().String())
	return serve(ctx, log, srv, ln)
}

func runWorker(ctx context.Context, cfg workerConfig) error {
	log, c, err := connect(ctx, cfg.common)
	if err != nil {
		return err
	}
	defer c.Close()
	cfg.workerSettings.namespace = cfg.Namespace
	stop, err := startWorker(ctx, log, c, cfg.workerSettings, cfg.RedisAddr, cfg.Kubeconfig)
	if err != nil {
		return err
	}
	defer stop()
	log.Info(msgReady, "task_queue", workflows.TaskQueue)
	<-ctx.Done()
	log.Info(msgShuttingDown)
	return nil
}

func startWorker(ctx context.Context, log *slog.Logger, c client.Client, w workerSettings, redisAddr, kubeconfig string) (func(), error) {
	kcfg, err := kube.LoadConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	creds, err := w.credentials()
	if err != nil {
		return nil, err
	}
	projects, err := loadProjects(w.ProjectsFile)
	if err != nil {
		return nil, err
	}
	plugins, err := loadPlugins(w.PluginsFile)
	if err != nil {
		return nil, err
	}
	var checker cluster.HealthChecker
	if w.ResourceCustomizations != "" {
		hc, err := health.New(health.Options{CustomizationsDir: w.ResourceCustomizations})
		if err != nil {
			return nil, err
		}
		checker = hc
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis unreachable at %s: %w", redisAddr, err)
	}
	wk, err := worker.New(worker.Config{
		Client: c, CacheDir: w.CacheDir, Redis: rdb, Kube: kcfg,
		KubeOptions: kube.Options{QPS: float32(w.KubeQPS), Burst: w.KubeBurst},
		Logger:      log, MaxConcurrentActivities: w.MaxActivities,
		Credentials: creds, Namespace: w.namespace, Projects: projects, Health: checker,
		SweepEvery: w.SweepEvery, Cache: w.cacheConfig(), Plugins: plugins,
	})
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	if err := wk.Start(); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return func() { wk.Stop(); _ = rdb.Close() }, nil
}

func listenAPI(log *slog.Logger, c client.Client, addr, namespace string, refresh int) (*http.Server, net.Listener, error) {
	h := api.New(c, api.Options{
		Logger: log, Namespace: namespace,
		AppConfig: workflows.AppConfig{RefreshSeconds: refresh, DriftWatch: true},
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen for the api on %s: %w", addr, err)
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln, nil
}

// serve serves until ctx ends, then shuts down gracefully.
func serve(ctx context.Context, log *slog.Logger, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("api server: %w", err)
	case <-ctx.Done():
	}
	log.Info(msgShuttingDown)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loadProjects reads a JSON list of projects (Argo CD AppProject specs in
// Windlass's form); the default project always exists.
func loadProjects(path string) (*project.StaticStore, error) {
	if path == "" {
		return project.NewStaticStore()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("projects file: %w", err)
	}
	var list []appspec.Project
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("projects file %s: %w", path, err)
	}
	return project.NewStaticStore(list...)
}

// loadPlugins reads a YAML or JSON list of plugins (Argo CD's plugin.yaml
// spec fields, with a name).
func loadPlugins(path string) ([]render.PluginConfig, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plugins file: %w", err)
	}
	var list []render.PluginConfig
	if err := yaml.UnmarshalStrict(b, &list); err != nil {
		return nil, fmt.Errorf("plugins file %s: %w", path, err)
	}
	if err := render.ValidatePlugins(list); err != nil {
		return nil, fmt.Errorf("plugins file %s: %w", path, err)
	}
	return list, nil
}
