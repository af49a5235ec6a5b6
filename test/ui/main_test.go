package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/healthlog"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/workflows"
)

// bed is what the browser talks to: the API serving the UI, wired as
// `windlass dev` wires it, on the test bed.
var bed struct {
	env      *testbed.Env
	git      *testbed.GitServer
	temporal client.Client
	api      *httptest.Server
	kube     kubernetes.Interface
	// namespace is Temporal's namespace.
	namespace     string
	adminPassword string
	// store is the settings' secret store (the notifications secret).
	store secretstore.Store
}

// The read-only account.
const (
	viewerName     = "viewer"
	viewerPassword = "viewer-password-ui"
)

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "ui test setup:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "windlass-ui-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	env, cleanup, err := testbed.Shared(ctx, "ui")
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	bed.env = env

	out := io.Discard
	if os.Getenv("WINDLASS_UI_LOG") != "" {
		out = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))

	if bed.git, err = testbed.StartGitServer(filepath.Join(tmp, "git")); err != nil {
		return fail(err)
	}
	defer bed.git.Close()
	dev, err := temporalx.StartDevServer(ctx, temporalx.DevServerConfig{
		DataDir: filepath.Join(tmp, "temporal"), FrontendAddr: "127.0.0.1:0", UIAddr: "off",
		SearchAttributes: worker.SearchAttributes(), Logger: log,
	})
	if err != nil {
		return fail(err)
	}
	defer dev.Stop()
	bed.namespace = dev.Namespace()
	if bed.temporal, err = temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: dev.FrontendAddr(), Namespace: dev.Namespace(), Logger: log}); err != nil {
		return fail(err)
	}
	defer bed.temporal.Close()

	rdb := redis.NewClient(&redis.Options{Addr: env.RedisAddr})
	defer rdb.Close()
	if bed.kube, err = kubernetes.NewForConfig(env.Cluster.Config); err != nil {
		return fail(err)
	}
	store, err := secretstore.NewKubernetes(bed.kube, fmt.Sprintf("windlass-ui-%d", time.Now().UnixNano()%1e9))
	if err != nil {
		return fail(err)
	}
	sets, err := settings.New(store)
	if err != nil {
		return fail(err)
	}
	bed.store = store
	// One kind is excluded, as resource.exclusions would, so that an app
	// rendering it has a condition (TestBrowserLayout).
	excluded, err := resourcefilter.New([]resourcefilter.Rule{{APIGroups: []string{"policy"}, Kinds: []string{"PodDisruptionBudget"}, Clusters: []string{"*"}}}, nil)
	if err != nil {
		return fail(err)
	}
	w, err := worker.New(worker.Config{
		Settings: sets, Client: bed.temporal, CacheDir: filepath.Join(tmp, "cache"), Redis: rdb,
		Kube: env.Cluster.Config, Logger: log, Namespace: dev.Namespace(), WatchDebounce: 200 * time.Millisecond,
		Customizations: worker.CustomizationsConfig{Resources: excluded},
	})
	if err != nil {
		return fail(err)
	}
	if err := w.Start(); err != nil {
		return fail(err)
	}
	defer w.Stop()

	authSvc, err := auth.New(auth.Config{Accounts: []auth.AccountConfig{
		{Name: viewerName, Enabled: true, Capabilities: []string{auth.CapabilityLogin}},
	}}, store, auth.RedisRevocations{Client: rdb}, log)
	if err != nil {
		return fail(err)
	}
	if bed.adminPassword, err = authSvc.Bootstrap(ctx); err != nil {
		return fail(err)
	}
	asAdmin := auth.ContextWithPrincipal(ctx, auth.Principal{Name: auth.AdminAccount, Kind: auth.KindSession})
	if err := authSvc.SetPassword(asAdmin, viewerName, bed.adminPassword, viewerPassword); err != nil {
		return fail(err)
	}
	enf, err := rbac.New(rbac.Config{PolicyCSV: "g, " + viewerName + ", " + rbac.RoleReadonly + "\n"}, nil)
	if err != nil {
		return fail(err)
	}
	insp, err := api.NewInspector(render.RedisStore{Client: rdb}, kube.NewFactory(env.Cluster.Config, kube.Options{Resolver: sets.ClusterConfig}), log)
	if err != nil {
		return fail(err)
	}
	healthLog, err := healthlog.New(rdb)
	if err != nil {
		return fail(err)
	}
	// The set preview reads Git as windlass dev's does.
	previewGit, err := source.New(filepath.Join(tmp, "appset"), &source.RegisteredAuth{Repos: sets}, log)
	if err != nil {
		return fail(err)
	}
	srv, err := api.New(bed.temporal, api.Options{
		AppSets: appset.New(sets, source.Trees{Git: previewGit}, store),
		Logger:  log, Namespace: dev.Namespace(), Auth: authSvc, RBAC: enf, Settings: sets, Inspector: insp, HealthHistory: healthLog,
		AppConfig:     workflows.AppConfig{RefreshSeconds: 600, SyncTimeoutSeconds: 120, DriftWatch: true},
		TemporalUIURL: "http://127.0.0.1:8233",
	})
	if err != nil {
		return fail(err)
	}
	bed.api = httptest.NewServer(srv)
	defer bed.api.Close()
	return m.Run()
}
