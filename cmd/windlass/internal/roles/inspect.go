package roles

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/worker/children"
)

// mirrorEvery is how often windlass server looks for a newer set of the
// workers' resource customizations.
const mirrorEvery = 30 * time.Second

const msgMirrorFailed = "resource customizations not taken from the workers; the built-in checks or the last set stay"

// workerCustomizations follows the resource customizations that the
// workers publish in rdb, so that windlass server, which runs no worker,
// assesses the tree's health and lists resource actions with the same
// scripts as they do. It runs until ctx ends.
func workerCustomizations(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) *customizations.Mirror {
	m := customizations.NewMirror(customizations.RedisStatuses{Client: rdb}, log)
	if err := m.Load(ctx); err != nil {
		log.Warn(msgMirrorFailed, "error", err)
	}
	go m.Run(ctx, mirrorEvery)
	return m
}

// newInspector serves the API's manifests, diff, tree and events endpoints:
// manifests from the manifest cache the workers fill, live state from the
// local cluster and the registered ones. hc and acts are the health
// checker and resource actions of the worker in the same process (nil: the
// built-ins), so that the API agrees with it. Apps that an app's manifests
// declare are read through c in namespace. extra are further options, such
// as the worker's system-wide ignoreDifferences and resource filter.
func newInspector(kcfg *rest.Config, rdb redis.UniversalClient, sets *settings.Store, log *slog.Logger, hc cluster.HealthChecker, acts cluster.ActionCatalog,
	c client.Client, namespace string, extra ...cluster.Option) (api.Inspector, error) {
	decls, err := children.New(&children.TemporalApps{Client: c, Namespace: namespace}, sets)
	if err != nil {
		return nil, err
	}
	opts := []cluster.Option{cluster.WithDeclarations(decls)}
	if hc != nil {
		opts = append(opts, cluster.WithHealthChecker(hc))
	}
	if acts != nil {
		opts = append(opts, cluster.WithActions(acts))
	}
	opts = append(opts, extra...)
	clusters := kube.NewFactory(kcfg, kube.Options{Resolver: sets.ClusterConfig})
	return api.NewInspector(render.RedisStore{Client: rdb}, clusters, log, opts...)
}
