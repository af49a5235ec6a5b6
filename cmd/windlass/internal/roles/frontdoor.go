package roles

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/frontdoor"
)

// The Kubernetes front door (api/frontdoor) runs in the API's process
// (server or dev): it creates and deletes apps through the API's own
// project checks and workflow updates, with its Temporal client. Of
// several server replicas, the holder of a Lease in the management
// namespace runs it.
const (
	frontDoorLease = "windlass-frontdoor"
	// Client-side rate limit of the status writes.
	frontDoorQPS   = 50
	frontDoorBurst = 100

	msgFrontDoorLeading = "leading the application watch"
	msgFrontDoorStopped = "the application watch stopped"
)

func bindFrontDoor(fs *flag.FlagSet, a *apiSettings) {
	fs.StringVar(&a.WatchApplications, "watch-applications", env("WATCH_APPLICATIONS", ""), "comma-separated namespaces whose Argo CD Application and AppProject resources (argoproj.io/v1alpha1) create, update and delete apps and projects, with their status written back (env WINDLASS_WATCH_APPLICATIONS)")
}

// watchNamespaces parses --watch-applications.
func watchNamespaces(v string) ([]string, error) {
	var out []string
	for ns := range strings.SplitSeq(v, ",") {
		if ns = strings.TrimSpace(ns); ns == "" || slices.Contains(out, ns) {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("watch-applications: namespace %q: %s", ns, errs[0])
		}
		out = append(out, ns)
	}
	return out, nil
}

// startFrontDoor runs the front door over namespaces in the background
// until ctx ends, while this process holds the lease.
func startFrontDoor(ctx context.Context, log *slog.Logger, kcfg *rest.Config, srv *api.Server, a apiSettings, leaseNamespace string) error {
	namespaces, err := watchNamespaces(a.WatchApplications)
	if err != nil || len(namespaces) == 0 {
		return err
	}
	c := rest.CopyConfig(kcfg)
	c.QPS, c.Burst = frontDoorQPS, frontDoorBurst
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: frontDoorLease, Namespace: leaseNamespace},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: fmt.Sprintf("%s-%d", host, os.Getpid())},
	}
	run := func(ctx context.Context) {
		log.Info(msgFrontDoorLeading, "namespaces", namespaces)
		fd, err := frontdoor.New(dyn, srv, frontdoor.Config{Namespaces: namespaces, Logger: log})
		if err == nil {
			err = fd.Run(ctx)
		}
		if err != nil && ctx.Err() == nil {
			log.Error(msgFrontDoorStopped, "error", err)
		}
	}
	go func() {
		for ctx.Err() == nil {
			leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
				Lock: lock, Name: frontDoorLease, ReleaseOnCancel: true,
				LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
				Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: run, OnStoppedLeading: func() {}},
			})
		}
	}()
	return nil
}
