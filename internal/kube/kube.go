package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// ErrUnknownCluster is returned for a destination server that is not registered.
var ErrUnknownCluster = failure.Permanent("UnknownCluster", "destination cluster is not registered")

// Clients are the clients for one cluster.
type Clients struct {
	Dynamic dynamic.Interface
	// Metadata lists and reads objects' metadata only (protobuf where the
	// server has it): a fraction of a full object's decoding.
	Metadata metadata.Interface
	Mapper   meta.ResettableRESTMapper
	// Core is the typed core/v1 client, for what the dynamic client cannot
	// read, such as a pod's logs.
	Core typedcorev1.CoreV1Interface
	Host string
}

// Factory hands out clients per destination server: the cluster of its
// own configuration (in-cluster), and registered clusters through
// Options.Resolver, whose clients are rebuilt every few minutes so that
// rotated credentials are picked up.
type Factory struct {
	cfg     *rest.Config
	resolve Resolver
	mu      sync.Mutex
	local   *entry
	remote  map[string]*entry
	opts    Options
	// users holds the impersonating clients (ForUser) by server and user.
	users map[[2]string]*entry
}

type entry struct {
	clients *Clients
	disc    discovery.DiscoveryInterface
	at      time.Time
	cfg     *rest.Config
}

// Resolver returns the client configuration of a registered destination
// server (its URL or name), or an error wrapping a not-found error.
type Resolver func(ctx context.Context, server string) (*rest.Config, error)

// remoteTTL bounds how long clients of a registered cluster are reused.
const remoteTTL = 5 * time.Minute

// Options tune the client.
type Options struct {
	// QPS and Burst of the client-side rate limiter. Server-side apply
	// throughput matters at scale, so the defaults are high.
	QPS   float32
	Burst int
	// Resolver finds registered clusters (nil: only the local one).
	Resolver Resolver
}

// LoadConfig reads a kubeconfig file ("" means the default loading rules:
// $KUBECONFIG, then ~/.kube/config).
func LoadConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

// NewFactory makes a factory for the cluster of cfg.
func NewFactory(cfg *rest.Config, opts Options) *Factory {
	return &Factory{cfg: tune(cfg, opts), resolve: opts.Resolver, remote: map[string]*entry{}, opts: opts}
}

func tune(cfg *rest.Config, opts Options) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = opts.QPS, opts.Burst
	if c.QPS == 0 {
		c.QPS = 500
	}
	if c.Burst == 0 {
		c.Burst = 1000
	}
	c.UserAgent = "windlass"
	return c
}

// IsLocal reports whether server names the factory's own cluster.
func (f *Factory) IsLocal(server string) bool {
	s := strings.TrimSuffix(server, "/")
	return s == "" || s == appspec.InClusterServer || s == "in-cluster" || s == strings.TrimSuffix(f.cfg.Host, "/")
}

// For returns the clients for a destination server.
func (f *Factory) For(server string) (*Clients, error) {
	e, err := f.entry(server)
	if err != nil {
		return nil, err
	}
	return e.clients, nil
}

func (f *Factory) entry(server string) (*entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.IsLocal(server) {
		if f.local == nil {
			e, err := newEntry(f.cfg)
			if err != nil {
				return nil, err
			}
			f.local = e
		}
		return f.local, nil
	}
	if e, ok := f.remote[server]; ok && time.Since(e.at) < remoteTTL {
		return e, nil
	}
	if f.resolve == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCluster, server)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := f.resolve(ctx, server)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnknownCluster, server, err)
	}
	e, err := newEntry(tune(cfg, f.opts))
	if err != nil {
		return nil, err
	}
	f.remote[server] = e
	return e, nil
}

func newEntry(cfg *rest.Config) (*entry, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	core, err := typedcorev1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("core client: %w", err)
	}
	return &entry{disc: disc, at: time.Now(), cfg: cfg, clients: &Clients{
		Dynamic:  dyn,
		Metadata: md,
		Mapper:   restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		Core:     core,
		Host:     cfg.Host,
	}}, nil
}

// ServerPreferredResources lists the kinds the server serves, in their
// preferred versions. Groups that fail discovery (a broken aggregated API)
// are left out rather than failing the whole list.
func (f *Factory) ServerPreferredResources(server string) ([]*metav1.APIResourceList, error) {
	e, err := f.entry(server)
	if err != nil {
		return nil, err
	}
	lists, err := e.disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover resources of %s: %w", server, err)
	}
	return lists, nil
}
