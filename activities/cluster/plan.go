package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Plan lays out a sync before anything touches the cluster: the PreSync,
// Sync and PostSync steps (waves ascending; hooks only with the hook
// strategy and outside a selective sync), the SyncFail steps, the number
// of tracked resources to prune and whether pruning comes last. Every
// object is checked against the project (kind and scope, destination
// namespace); forbidden objects fail the plan with a non-retryable
// ForbiddenError that lists them all, and kinds the cluster does not serve
// (unless a CRD in the manifests defines them, or
// SkipDryRunOnMissingResource=true) with ErrUnknownKind.
func (a *Activities) Plan(ctx context.Context, in PlanInput) (PlanOutput, error) {
	out, err := a.plan(ctx, in)
	if err != nil {
		err = fmt.Errorf("plan sync of %s: %w", appName(in.Target), err)
	}
	return out, failure.Activity(err)
}

func (a *Activities) plan(ctx context.Context, in PlanInput) (PlanOutput, error) {
	t, op := in.Target, in.Operation
	d, err := a.load(ctx, t, in.Manifests, op.SyncOptions)
	if err != nil {
		return PlanOutput{}, err
	}
	if err := d.validate(t, in.Project, d.objs); err != nil {
		return PlanOutput{}, err
	}
	if err := a.checkDeclarations(ctx, t, d); err != nil {
		return PlanOutput{}, err
	}
	objs, skipped := d.expand(t, op)
	skipped = append(skipped, skippedExcluded(d.excluded, op)...)
	out := PlanOutput{Skipped: skipped, PruneLast: d.opts.True(optPruneLast)}
	for _, o := range objs {
		steps := &out.Steps
		if o.phase == PhaseSyncFail {
			steps = &out.SyncFail
		}
		if n := len(*steps); n > 0 && (*steps)[n-1].Phase == o.phase && (*steps)[n-1].Wave == o.wave {
			(*steps)[n-1].Resources++
			continue
		}
		*steps = append(*steps, Step{Phase: o.phase, Wave: o.wave, Resources: 1})
	}
	if !op.Prune {
		// Nothing is pruned: the candidates, which take a list of every
		// kind the cluster serves, are not needed.
		return out, nil
	}
	prune, err := a.pruneCandidates(ctx, d, t, op)
	if err != nil {
		return PlanOutput{}, err
	}
	out.Prune = len(prune)
	if extra, err := a.declaredExtra(ctx, t, d, false); err != nil {
		return PlanOutput{}, err
	} else {
		out.Prune += len(extra)
	}
	if !out.PruneLast {
		for _, l := range prune {
			if pruneLast(t, op, l) {
				out.PruneLastResources++
			}
		}
	}
	return out, nil
}

// validate checks objects that a sync or deletion may apply against the
// project (nil: no restriction) and the kinds the cluster serves.
func (d *desired) validate(t Target, p *appspec.Project, objs []*object) error {
	var forbidden []appspec.ResourceKey
	var unknown, invalid []string
	for _, o := range objs {
		if o.hook.Skip || o.decl {
			continue
		}
		if o.obj.GetName() == "" && !o.hook.IsHook() {
			invalid = append(invalid, o.obj.GetKind()+" "+o.obj.GetGenerateName()+"* (generateName is only supported on hooks)")
		}
		namespaced := o.namespaced()
		if o.mapping == nil {
			scope, ok := d.crds[o.obj.GroupVersionKind().GroupKind()]
			if !ok && !o.opts.True(optSkipDryRunOnMissing) {
				unknown = append(unknown, o.obj.GroupVersionKind().String()+" "+o.obj.GetName())
			}
			namespaced = scope != apiextensionsClusterScope
		}
		if p == nil {
			continue
		}
		k := o.key()
		if !p.PermitsResource(k.Group, k.Kind, namespaced) ||
			(namespaced && !p.PermitsDestination(appspec.Destination{Server: t.Destination.Server, Name: t.Destination.Name, Namespace: k.Namespace})) {
			forbidden = append(forbidden, k)
		}
	}
	if len(invalid) > 0 {
		return fmt.Errorf("%w: %s", manifest.ErrInvalidManifest, strings.Join(invalid, ", "))
	}
	if len(forbidden) > 0 {
		return &ForbiddenError{Project: p.Name, Resources: forbidden}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: %s", ErrUnknownKind, strings.Join(unknown, ", "))
	}
	return nil
}
