package cluster

import (
	"fmt"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
)

// Sync impersonation, as Argo CD's application.sync.impersonation.enabled:
// with it on, a sync's writes (apply, hooks, prune) go through
// Kubernetes impersonation of the service account the app's project
// names for its destination (Target.ServiceAccount), and a sync whose
// project names none fails. Reads (compare, watch, health) keep the
// worker's own identity.

// ErrNoServiceAccount fails a sync that impersonation leaves without a
// service account.
var ErrNoServiceAccount = failure.Permanent("NoServiceAccount", "sync impersonation is on and the project names no service account for this destination")

// UserSource hands out clients that impersonate a user; *kube.Factory is
// one.
type UserSource interface {
	ForUser(server, user string) (*kube.Clients, error)
}

var _ UserSource = (*kube.Factory)(nil)

// WithSyncImpersonation turns sync impersonation on (default off).
func WithSyncImpersonation(on bool) Option {
	return func(a *Activities) { a.impersonate = on }
}

// syncClients are the clients of a sync's writes: c, or with sync
// impersonation those acting as the target's service account.
func (a *Activities) syncClients(t Target, c *kube.Clients) (*kube.Clients, error) {
	if !a.impersonate {
		return c, nil
	}
	if t.ServiceAccount == "" {
		return nil, fmt.Errorf("%w (project %s, server %s, namespace %q): add a destinationServiceAccounts entry",
			ErrNoServiceAccount, t.Project, t.Destination.Server, t.Destination.Namespace)
	}
	us, ok := a.clusters.(UserSource)
	if !ok {
		return nil, fmt.Errorf("%w: the cluster clients cannot impersonate", ErrNoServiceAccount)
	}
	ic, err := us.ForUser(t.Destination.Server, t.ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("clients as %s: %w", t.ServiceAccount, err)
	}
	return ic, nil
}
