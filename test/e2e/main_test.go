package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/workflows"
)

// bed is everything the tests talk to.
var bed struct {
	env *testbed.Env
	git *testbed.GitServer
	// authGit requires basic auth with secret, which the worker reads from
	// a file by reference.
	authGit  *testbed.GitServer
	secret   string
	temporal client.Client
	api      *httptest.Server
	kube     kubernetes.Interface
	logs     *os.File
}

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "windlass-e2e-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)

	env, cleanup, err := testbed.Shared(ctx, "e2e")
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	bed.env = env

	// Worker and API logs go to a file that the secrets test can scan.
	logPath := filepath.Join(tmp, "windlass.log")
	if p := os.Getenv("WINDLASS_E2E_LOG"); p != "" {
		logPath = p // keep the log for debugging
	}
	bed.logs, err = os.Create(logPath)
	if err != nil {
		return fail(err)
	}
	log := slog.New(slog.NewTextHandler(bed.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	bed.git, err = testbed.StartGitServer(filepath.Join(tmp, "git"))
	if err != nil {
		return fail(err)
	}
	defer bed.git.Close()

	bed.secret = fmt.Sprintf("wl-secret-%d-do-not-leak", time.Now().UnixNano())
	bed.authGit, err = testbed.StartGitServer(filepath.Join(tmp, "authgit"), testbed.GitServerOptions{Username: "deploy", Password: bed.secret})
	if err != nil {
		return fail(err)
	}
	defer bed.authGit.Close()
	secretFile := filepath.Join(tmp, "git-password")
	if err := os.WriteFile(secretFile, []byte(bed.secret+"\n"), 0o600); err != nil {
		return fail(err)
	}

	dev, err := temporalx.StartDevServer(ctx, temporalx.DevServerConfig{
		DataDir: filepath.Join(tmp, "temporal"), FrontendAddr: "127.0.0.1:0", UIAddr: "off",
		SearchAttributes: worker.SearchAttributes(), Logger: log,
	})
	if err != nil {
		return fail(err)
	}
	defer dev.Stop()
	bed.temporal, err = temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: dev.FrontendAddr(), Namespace: dev.Namespace(), Logger: log})
	if err != nil {
		return fail(err)
	}
	defer bed.temporal.Close()

	rdb := redis.NewClient(&redis.Options{Addr: env.RedisAddr})
	defer rdb.Close()
	w, err := worker.New(worker.Config{
		Client: bed.temporal, CacheDir: filepath.Join(tmp, "cache"), Redis: rdb,
		Kube: env.Cluster.Config, Logger: log, Namespace: dev.Namespace(),
		Credentials: source.Credentials{Repos: []source.RepoCredential{
			{URLPrefix: bed.authGit.URL(""), Username: "deploy", PasswordFile: secretFile},
		}},
		WatchDebounce: 200 * time.Millisecond,
	})
	if err != nil {
		return fail(err)
	}
	if err := w.Start(); err != nil {
		return fail(err)
	}
	defer w.Stop()

	bed.kube, err = kubernetes.NewForConfig(env.Cluster.Config)
	if err != nil {
		return fail(err)
	}
	bed.api = httptest.NewServer(api.New(bed.temporal, api.Options{
		Logger: log, Namespace: dev.Namespace(),
		AppConfig: workflows.AppConfig{RefreshSeconds: 600, SyncTimeoutSeconds: 120, DriftWatch: true},
	}))
	defer bed.api.Close()
	code := m.Run()
	if dir := os.Getenv("WINDLASS_UPDATE_HISTORIES"); dir != "" && code == 0 {
		if err := captureHistories(context.Background(), dir, 3); err != nil {
			return fail(fmt.Errorf("capture histories: %w", err))
		}
	}
	return code
}
