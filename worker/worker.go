package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/redis/go-redis/v9"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/workflows"
)

// Config holds what a worker needs.
type Config struct {
	Client    client.Client
	TaskQueue string
	// CacheDir holds the Git mirrors and checkouts.
	CacheDir    string
	Redis       redis.UniversalClient
	Kube        *rest.Config
	KubeOptions kube.Options
	Credentials source.Credentials
	Logger      *slog.Logger
	// MaxConcurrentActivities bounds parallel activities (0: SDK default).
	MaxConcurrentActivities int
}

// Worker is a running Temporal worker.
type Worker struct{ w sdkworker.Worker }

// New builds the activities and registers everything.
func New(cfg Config) (*Worker, error) {
	if cfg.Client == nil || cfg.Redis == nil || cfg.Kube == nil {
		return nil, errors.New("worker: temporal client, redis and kube config are required")
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = workflows.TaskQueue
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	src, err := source.New(cfg.CacheDir, cfg.Credentials, log)
	if err != nil {
		return nil, err
	}
	renderer, err := render.NewRenderer(render.Config{Store: render.RedisStore{Client: cfg.Redis}, Git: src, CacheDir: filepath.Join(cfg.CacheDir, "render"), Logger: log})
	if err != nil {
		return nil, err
	}
	rnd, err := render.New(renderer)
	if err != nil {
		return nil, err
	}
	cl, err := cluster.New(renderer, kube.NewFactory(cfg.Kube, cfg.KubeOptions), log)
	if err != nil {
		return nil, err
	}
	w := sdkworker.New(cfg.Client, cfg.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: cfg.MaxConcurrentActivities,
	})
	workflows.Register(w)
	src.Register(w)
	rnd.Register(w)
	cl.Register(w)
	return &Worker{w: w}, nil
}

// Start starts polling.
func (w *Worker) Start() error {
	if err := w.w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	return nil
}

// Stop stops polling and waits for running tasks.
func (w *Worker) Stop() { w.w.Stop() }

// SearchAttributes are the custom search attributes the namespace needs.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	m := make(map[string]enumspb.IndexedValueType, len(workflows.KeywordSearchAttributes))
	for _, n := range workflows.KeywordSearchAttributes {
		m[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return m
}
