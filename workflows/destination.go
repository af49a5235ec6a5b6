package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/windlass-cd/windlass/activities/placement"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
)

// An app may name its cluster by a registered name (destination.name), as
// in Argo CD. The spec keeps the name; the placement activity resolves it
// to the cluster's server with the task queue (onCluster), so that a
// cluster re-pointed or renamed is followed within placementTTL, or at
// once on a hard refresh. Everything that reaches the cluster uses
// destSpec. A spec that names its cluster by server takes none of these
// paths, so histories of 0.1.0 (which refused names) replay unchanged.

// destSpec is the spec with its destination name resolved to the server
// of the last placement. Unresolved, the server is the name itself, which
// the cluster activities' client factory resolves again (or refuses as an
// unknown cluster): never the empty server, which means the local cluster.
func (a *application) destSpec() appspec.Application {
	spec := a.st.Spec
	d := spec.Destination
	if d.Name == "" || d.Server != "" {
		return spec
	}
	server := d.Name
	if p := a.st.Placement; p != nil && p.Name == d.Name && p.Server != "" {
		server = p.Server
	}
	spec.Destination = d.Resolved(server)
	return spec
}

// matches says whether p was resolved for the destination d.
func (p *Placement) matches(d appspec.Destination) bool {
	if d.Name != "" && d.Server == "" {
		return p.Name == d.Name
	}
	return p.Name == "" && p.Server == d.Server
}

// resolvePlacement asks the placement activity where d's cluster activities
// run and, for a name, which server it stands for.
func resolvePlacement(ctx workflow.Context, d appspec.Destination, now time.Time) (*Placement, error) {
	if d.Name == "" || d.Server != "" {
		q, err := clusterTaskQueue(ctx, d.Server)
		if err != nil {
			return nil, err
		}
		return &Placement{Server: d.Server, TaskQueue: q, ResolvedAt: now}, nil
	}
	var out placement.Output
	err := cheap(ctx, quickOptions, placement.TaskQueueName, placement.Input{Name: d.Name}).Get(ctx, &out)
	if err != nil {
		return nil, err
	}
	return &Placement{Server: out.Server, Name: d.Name, TaskQueue: out.TaskQueue, ResolvedAt: now}, nil
}

// isUnknownCluster says whether err is the placement's refusal of a
// cluster name that no registered cluster has.
func isUnknownCluster(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == failure.TypeOf(kube.ErrUnknownCluster)
}

// checkDestination resolves a new spec's destination name for its project
// check, and keeps the placement; an unknown name is an invalid spec.
func (a *application) checkDestination(ctx workflow.Context, spec appspec.Application) (appspec.Application, error) {
	d := spec.Destination
	if d.Name == "" || d.Server != "" {
		return spec, nil
	}
	p, err := resolvePlacement(ctx, d, workflow.Now(ctx))
	if err != nil {
		typ := ErrTypeUnavailable
		if isUnknownCluster(err) {
			typ = ErrTypeInvalidSpec
		}
		return spec, temporal.NewApplicationError(errorMessage(err), typ, "destination.name")
	}
	a.st.Placement = p
	spec.Destination = d.Resolved(p.Server)
	return spec, nil
}
