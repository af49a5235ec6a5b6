package kube

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
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
	Mapper  meta.ResettableRESTMapper
	Host    string
}

// Factory hands out clients per destination server.
type Factory struct {
	cfg     *rest.Config
	once    sync.Once
	clients *Clients
	disc    discovery.DiscoveryInterface
	err     error
}

// Options tune the client.
type Options struct {
	// QPS and Burst of the client-side rate limiter. Server-side apply
	// throughput matters at scale, so the defaults are high.
	QPS   float32
	Burst int
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
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = opts.QPS, opts.Burst
	if c.QPS == 0 {
		c.QPS = 500
	}
	if c.Burst == 0 {
		c.Burst = 1000
	}
	c.UserAgent = "windlass"
	return &Factory{cfg: c}
}

// For returns the clients for a destination server.
func (f *Factory) For(server string) (*Clients, error) {
	s := strings.TrimSuffix(server, "/")
	if s != "" && s != appspec.InClusterServer && s != "in-cluster" && s != strings.TrimSuffix(f.cfg.Host, "/") {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCluster, server)
	}
	f.once.Do(func() {
		dyn, err := dynamic.NewForConfig(f.cfg)
		if err != nil {
			f.err = fmt.Errorf("dynamic client: %w", err)
			return
		}
		disc, err := discovery.NewDiscoveryClientForConfig(f.cfg)
		if err != nil {
			f.err = fmt.Errorf("discovery client: %w", err)
			return
		}
		f.disc = disc
		f.clients = &Clients{
			Dynamic: dyn,
			Mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
			Host:    f.cfg.Host,
		}
	})
	return f.clients, f.err
}

// ServerPreferredResources lists the kinds the server serves, in their
// preferred versions. Groups that fail discovery (a broken aggregated API)
// are left out rather than failing the whole list.
func (f *Factory) ServerPreferredResources(server string) ([]*metav1.APIResourceList, error) {
	if _, err := f.For(server); err != nil {
		return nil, err
	}
	lists, err := f.disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover resources of %s: %w", server, err)
	}
	return lists, nil
}
