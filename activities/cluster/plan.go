package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

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
//
// Run as a local activity (the sync's worker reaches the cluster), a plan
// whose only step is a Sync wave without hooks applies that wave too, and
// returns it in Applied when it settled within loneSettle: the sync then
// needs no ApplyWave activity, and a first sync fits in one workflow task.
func (a *Activities) Plan(ctx context.Context, in PlanInput) (PlanOutput, error) {
	out, hooks, err := a.plan(ctx, in)
	if err != nil {
		return out, failure.Activity(fmt.Errorf("plan sync of %s: %w", appName(in.Target), err))
	}
	if !hooks && !in.Operation.DryRun && len(out.Steps) == 1 && out.Steps[0].Phase == PhaseSync &&
		activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity {
		out.Applied = a.applyLone(ctx, in, out.Steps[0])
	}
	return out, nil
}

// loneSettle bounds the settle wait of a wave the plan applies: below the
// SDK's workflow-task heartbeat (8 s of a 10 s task), so that the local
// activity holds a single workflow task.
const loneSettle = 5 * time.Second

// applyLone applies the plan's lone wave. A wave that fails or does not
// settle in loneSettle is left to the sync's ApplyWave, which applies it
// again (a server-side apply of the same objects changes nothing) and
// reports it as it always has.
func (a *Activities) applyLone(ctx context.Context, in PlanInput, step Step) *WaveOutput {
	w, err := a.ApplyWave(ctx, WaveInput{Target: in.Target, Manifests: in.Manifests, Operation: in.Operation, Step: step,
		SettleMillis: loneSettle.Milliseconds()})
	if err != nil || !w.Settled {
		a.log.Debug(msgLoneUnsettled, "app", appName(in.Target), "error", err)
		return nil
	}
	return &w
}

const msgLoneUnsettled = "the plan's wave did not settle; the sync applies it"

// plan lays the sync out, and says whether a step holds a hook.
func (a *Activities) plan(ctx context.Context, in PlanInput) (PlanOutput, bool, error) {
	t, op := in.Target, in.Operation
	d, err := a.load(ctx, t, in.Manifests, op.SyncOptions)
	if err != nil {
		return PlanOutput{}, false, err
	}
	if err := d.validate(t, in.Project, d.objs); err != nil {
		return PlanOutput{}, false, err
	}
	if err := a.checkDeclarations(ctx, t, d); err != nil {
		return PlanOutput{}, false, err
	}
	objs, skipped := d.expand(t, op)
	skipped = append(skipped, skippedExcluded(d.excluded, op)...)
	out := PlanOutput{Skipped: skipped, PruneLast: d.opts.True(optPruneLast)}
	hooks := false
	for _, o := range objs {
		steps := &out.Steps
		if o.phase == PhaseSyncFail {
			steps = &out.SyncFail
		} else {
			hooks = hooks || o.hook.IsHook()
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
		return out, hooks, nil
	}
	prune, err := a.pruneCandidates(ctx, d, t, op)
	if err != nil {
		return PlanOutput{}, false, err
	}
	out.Prune = len(prune)
	if extra, err := a.declaredExtra(ctx, t, d, false); err != nil {
		return PlanOutput{}, false, err
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
	return out, hooks, nil
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
