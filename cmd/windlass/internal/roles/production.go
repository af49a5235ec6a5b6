package roles

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/internal/metrics"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/temporalx"
	"github.com/windlass-cd/windlass/worker"
	"github.com/windlass-cd/windlass/workflows"
)

// Roles, as prodSettings knows them.
const (
	roleDev    = "dev"
	roleServer = "server"
	roleWorker = "worker"
)

// Secret stores.
const (
	secretStoreKubernetes = "kubernetes"
	secretStoreMemory     = "memory"
)

// prodSettings are the production settings of a role: how it reaches
// Temporal and Redis, where its secrets live, where it serves metrics and
// (worker and server) its task queues.
type prodSettings struct {
	Temporal temporalConn
	Redis    redisConn
	// SecretStore is kubernetes (Secrets in the management namespace) or
	// memory (this process only, lost on exit: one dev process, tests).
	SecretStore string
	// MetricsAddr is a separate listener for /metrics, /healthz, /readyz
	// and /debug/pprof/; empty serves the first three on the API listener
	// (server, dev only) and no profiles.
	MetricsAddr string
	// TaskQueues a worker polls (the first also gets the cluster watch and
	// the self-heal schedule); the server starts new apps on the first.
	TaskQueues queueList
	// RegisterSearchAttributes adds Windlass's custom search attributes to
	// the namespace at start (server and worker).
	RegisterSearchAttributes bool
	role                     string
}

// queueList is a repeatable flag; commas separate values too.
type queueList []string

func (s *queueList) String() string { return strings.Join(*s, ",") }

func (s *queueList) Set(v string) error {
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

// bindProd binds the production flags of role; redisAddr is the role's
// --redis-address.
func bindProd(fs *flag.FlagSet, p *prodSettings, role string, redisAddr *string) {
	p.role = role
	if role != roleDev {
		bindTemporalConn(fs, &p.Temporal)
		fs.BoolVar(&p.RegisterSearchAttributes, "register-search-attributes", envBool("WINDLASS_REGISTER_SEARCH_ATTRIBUTES", true), "add Windlass's custom search attributes to the Temporal namespace at start; where the operator API is refused (Temporal Cloud) a warning names them (env WINDLASS_REGISTER_SEARCH_ATTRIBUTES)")
	}
	bindRedisConn(fs, &p.Redis, redisAddr)
	fs.StringVar(&p.SecretStore, "secret-store", env("SECRET_STORE", secretStoreKubernetes), "where accounts, keys and credentials live: kubernetes (Secrets in --management-namespace) or memory (this process only, lost on exit) (env WINDLASS_SECRET_STORE)")
	metricsDefault, metricsHelp := "", "separate listen address for /metrics, /healthz, /readyz and /debug/pprof/ (default: the first three on the API listener, no profiles)"
	if role == roleWorker {
		metricsDefault, metricsHelp = ":9090", "listen address for /metrics, /healthz, /readyz and /debug/pprof/"
	}
	fs.StringVar(&p.MetricsAddr, "metrics-address", env("METRICS_ADDRESS", metricsDefault), metricsHelp+" (env WINDLASS_METRICS_ADDRESS)")
	switch role {
	case roleWorker:
		_ = p.TaskQueues.Set(env("TASK_QUEUES", ""))
		fs.Var(&p.TaskQueues, "task-queue", "task queue to poll; repeat it (or separate by commas) to poll several (env WINDLASS_TASK_QUEUES; default "+workflows.TaskQueue+")")
	case roleServer:
		_ = p.TaskQueues.Set(env("TASK_QUEUES", ""))
		fs.Var(&p.TaskQueues, "task-queue", "task queue new applications' workflows run on (env WINDLASS_TASK_QUEUES; default "+workflows.TaskQueue+")")
	}
}

func (p prodSettings) validate() error {
	errs := []error{p.Temporal.validate(), p.Redis.validate()}
	switch p.SecretStore {
	case "", secretStoreKubernetes, secretStoreMemory:
	default:
		errs = append(errs, fmt.Errorf("secret-store %q: want %s or %s", p.SecretStore, secretStoreKubernetes, secretStoreMemory))
	}
	if p.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(p.MetricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("metrics-address: %w", err))
		}
	}
	if p.role == roleServer && len(p.TaskQueues) > 1 {
		errs = append(errs, errors.New("the server starts applications on one task queue: give --task-queue once"))
	}
	return errors.Join(errs...)
}

// taskQueues returns the task queues, the default one when none is given.
func (p prodSettings) taskQueues() []string {
	if len(p.TaskQueues) == 0 {
		return []string{workflows.TaskQueue}
	}
	return p.TaskQueues
}

// clientConfig is the Temporal client configuration of the role: TLS and
// credentials, the metrics handler and, for a role that runs workers, the
// sync metrics interceptor.
func (p prodSettings) clientConfig(c common, log *slog.Logger, m *metrics.Metrics) (temporalx.ClientConfig, error) {
	tlsCfg, err := p.Temporal.tlsConfig()
	if err != nil {
		return temporalx.ClientConfig{}, err
	}
	cc := temporalx.ClientConfig{
		HostPort: c.TemporalAddr, Namespace: c.Namespace, Logger: log,
		TLS: tlsCfg, Credentials: p.Temporal.credentials(), MetricsHandler: m.Temporal(),
	}
	if p.role != roleServer {
		cc.Interceptors = []interceptor.ClientInterceptor{syncInterceptor()}
	}
	return cc, nil
}

const msgConnecting = "connecting"

// logConnections logs where the role connects, without secrets.
func (p prodSettings) logConnections(log *slog.Logger, c common, redisAddr string) {
	args := append([]any{"temporal", c.TemporalAddr, "namespace", c.Namespace}, p.Temporal.describe()...)
	args = append(args, p.Redis.describe(redisAddr)...)
	log.Info(msgConnecting, append(args, "secret_store", p.SecretStore)...)
}

// openSettings opens the secret store chosen by --secret-store and the
// settings on it.
func (p prodSettings) openSettings(kcfg *rest.Config, namespace, projectsFile string) (secretstore.Store, *settings.Store, error) {
	if p.SecretStore != secretStoreMemory {
		return openSettings(kcfg, namespace, projectsFile)
	}
	projects, err := loadProjects(projectsFile)
	if err != nil {
		return nil, nil, err
	}
	store := &secretstore.Memory{}
	sets, err := settings.New(store, projects...)
	if err != nil {
		return nil, nil, err
	}
	return store, sets, nil
}

// devClientConfig is the Temporal client configuration of `windlass dev`
// against its embedded server: plaintext, with metrics and the sync
// metrics interceptor.
func devClientConfig(addr, namespace string, log *slog.Logger, m *metrics.Metrics) temporalx.ClientConfig {
	return temporalx.ClientConfig{
		HostPort: addr, Namespace: namespace, Logger: log, MetricsHandler: m.Temporal(),
		Interceptors: []interceptor.ClientInterceptor{syncInterceptor()},
	}
}

const (
	msgSearchAttrsAdded  = "temporal search attributes added"
	msgSearchAttrsManual = "cannot register the search attributes: create them with the temporal CLI or in Temporal Cloud"
)

// registerSearchAttributes makes sure the namespace has Windlass's custom
// search attributes. Where the operator API is refused (Temporal Cloud, a
// key without the right), it warns with the names to create instead.
func (p prodSettings) registerSearchAttributes(ctx context.Context, c client.Client, namespace string, log *slog.Logger) error {
	if !p.RegisterSearchAttributes {
		return nil
	}
	want := worker.SearchAttributes()
	added, err := temporalx.EnsureSearchAttributes(ctx, c, namespace, want)
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	switch {
	case err == nil:
		if len(added) > 0 {
			log.Info(msgSearchAttrsAdded, "namespace", namespace, "names", added)
		}
		return nil
	case errors.As(err, &denied), errors.As(err, &unimplemented):
		log.Warn(msgSearchAttrsManual, "namespace", namespace, "keyword", workflows.KeywordSearchAttributes,
			"keyword_list", workflows.KeywordListSearchAttributes, "error", err)
		return nil
	}
	return fmt.Errorf("temporal search attributes: %w", err)
}
