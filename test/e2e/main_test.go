package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/api/webhook"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/worker/children"
	"github.com/windlass-cd/windlass/workflows"
)

// bed is everything the tests talk to.
var bed struct {
	env *testbed.Env
	git *testbed.GitServer
	// authGit requires basic auth with secret, which the worker reads from
	// a file by reference.
	authGit *testbed.GitServer
	secret  string
	// secretFile holds secret, for workers to read by reference.
	secretFile string
	// archive is the directory of the Temporal server's filestore archive.
	archive string
	// temporalAddr is the Temporal frontend's address.
	temporalAddr string
	temporal     client.Client
	api          *httptest.Server
	kube         kubernetes.Interface
	logs         *os.File
	// token is the admin's session; viewerToken a role:readonly user's.
	token, viewerToken string
	// hookSecret signs GitHub webhooks.
	hookSecret    string
	adminPassword string
	settings      *settings.Store
	// store, namespace and log are the API's, for the API servers of other
	// configurations (sso_test.go).
	store     secretstore.Store
	namespace string
	log       *slog.Logger
}

// viewerPassword is the password of the e2e account "viewer".
const viewerPassword = "viewer-password-e2e"

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

	bed.secretFile, bed.archive = secretFile, filepath.Join(tmp, "archive")
	dev, err := temporalx.StartDevServer(ctx, temporalx.DevServerConfig{
		DataDir: filepath.Join(tmp, "temporal"), FrontendAddr: "127.0.0.1:0", UIAddr: "off",
		SearchAttributes: worker.SearchAttributes(), Logger: log, Archival: temporalx.FileArchival(bed.archive),
		// The archival test's namespace has a retention of seconds; the
		// default jitter, scaled to this namespace's 30 days, is 30 min.
		RetentionJitter: time.Second,
	})
	if err != nil {
		return fail(err)
	}
	defer dev.Stop()
	bed.temporalAddr = dev.FrontendAddr()
	bed.temporal, err = temporalx.Dial(ctx, temporalx.ClientConfig{HostPort: dev.FrontendAddr(), Namespace: dev.Namespace(), Logger: log})
	if err != nil {
		return fail(err)
	}
	defer bed.temporal.Close()

	rdb := redis.NewClient(&redis.Options{Addr: env.RedisAddr})
	defer rdb.Close()
	bed.kube, err = kubernetes.NewForConfig(env.Cluster.Config)
	if err != nil {
		return fail(err)
	}
	store, err := secretstore.NewKubernetes(bed.kube, fmt.Sprintf("windlass-e2e-%d", time.Now().UnixNano()%1e9))
	if err != nil {
		return fail(err)
	}
	bed.settings, err = settings.New(store)
	bed.store, bed.namespace, bed.log = store, dev.Namespace(), log
	if err != nil {
		return fail(err)
	}
	w, err := worker.New(worker.Config{
		Settings: bed.settings,
		Client:   bed.temporal, CacheDir: filepath.Join(tmp, "cache"), Redis: rdb,
		Kube: env.Cluster.Config, Logger: log, Namespace: dev.Namespace(),
		Credentials: source.Credentials{Repos: []source.RepoCredential{
			{URLPrefix: bed.authGit.URL(""), Username: "deploy", PasswordFile: secretFile},
		}},
		WatchDebounce: 200 * time.Millisecond,
		AppConfig:     workflows.AppConfig{RefreshSeconds: 600, SyncTimeoutSeconds: 120, DriftWatch: true},
	})
	if err != nil {
		return fail(err)
	}
	if err := w.Start(); err != nil {
		return fail(err)
	}
	defer w.Stop()

	authSvc, err := auth.New(auth.Config{Accounts: []auth.AccountConfig{
		{Name: "viewer", Enabled: true, Capabilities: []string{auth.CapabilityLogin}},
	}}, store, auth.RedisRevocations{Client: rdb}, log)
	if err != nil {
		return fail(err)
	}
	adminPassword, err := authSvc.Bootstrap(ctx)
	if err != nil {
		return fail(err)
	}
	bed.adminPassword = adminPassword
	admin := auth.ContextWithPrincipal(ctx, auth.Principal{Name: auth.AdminAccount, Kind: auth.KindSession})
	if err := authSvc.SetPassword(admin, "viewer", adminPassword, viewerPassword); err != nil {
		return fail(err)
	}
	enf, err := rbac.New(rbac.Config{PolicyCSV: "g, viewer, role:readonly\n"}, nil)
	if err != nil {
		return fail(err)
	}
	bed.hookSecret = fmt.Sprintf("hook-secret-%d", time.Now().UnixNano())
	decls, err := children.New(&children.TemporalApps{Client: bed.temporal, Namespace: dev.Namespace()}, bed.settings)
	if err != nil {
		return fail(err)
	}
	insp, err := api.NewInspector(render.RedisStore{Client: rdb}, kube.NewFactory(env.Cluster.Config, kube.Options{Resolver: bed.settings.ClusterConfig}), log,
		cluster.WithDeclarations(decls))
	if err != nil {
		return fail(err)
	}
	srv, err := api.New(bed.temporal, api.Options{
		Logger: log, Namespace: dev.Namespace(), Auth: authSvc, RBAC: enf, Settings: bed.settings,
		Webhook:   webhook.Config{Secrets: webhook.Secrets{GitHub: bed.hookSecret}},
		AppConfig: workflows.AppConfig{RefreshSeconds: 600, SyncTimeoutSeconds: 120, DriftWatch: true},
		Inspector: insp,
	})
	if err != nil {
		return fail(err)
	}
	bed.api = httptest.NewServer(srv)
	defer bed.api.Close()
	if bed.token, err = login(ctx, auth.AdminAccount, adminPassword); err != nil {
		return fail(err)
	}
	if bed.viewerToken, err = login(ctx, "viewer", viewerPassword); err != nil {
		return fail(err)
	}
	code := m.Run()
	if dir := os.Getenv("WINDLASS_UPDATE_HISTORIES"); dir != "" && code == 0 {
		if err := captureHistories(context.Background(), dir, 3); err != nil {
			return fail(fmt.Errorf("capture histories: %w", err))
		}
	}
	return code
}

// login opens a session through the API and returns its token.
func login(ctx context.Context, user, password string) (string, error) {
	body, _ := json.Marshal(map[string]string{"username": user, "password": password})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, bed.api.URL+"/api/v1/session", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Token == "" {
		return "", fmt.Errorf("login %s: status %d: %v", user, resp.StatusCode, err)
	}
	return out.Token, nil
}
