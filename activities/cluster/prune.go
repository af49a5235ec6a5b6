package cluster

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

const (
	msgPruned             = "resource pruned"
	noteRequiresPruning   = "requires pruning: the sync does not prune"
	notePruneDisabled     = "kept: sync option Prune=false"
	noteNeedsConfirmation = "awaiting approval: sync option %s=confirm"
)

// Prune deletes the live objects tracked for the app that are no longer
// rendered (limited to the selection of a selective sync), in reverse
// order: highest wave first, then reverse kind order. Hooks are never
// pruned (DeleteHooks cleans them up), nor is any object whose tracking
// annotation does not name this app. Per resource, Prune=false keeps it,
// and Prune=confirm keeps it unless the prune is Approved, listing it in
// AwaitingApproval. Pass splits the candidates by their own PruneLast
// option. When the operation does not prune, every candidate is reported
// as requiring pruning and kept. PrunePropagationPolicy (foreground, the default,
// background or orphan) sets the deletion's propagation; deletion does
// not wait for the objects to be gone.
func (a *Activities) Prune(ctx context.Context, in PruneInput) (PruneOutput, error) {
	out, err := a.prune(ctx, in)
	if err != nil {
		err = fmt.Errorf("prune %s: %w", appName(in.Target), err)
	}
	out.Resources, out.Omitted = boundResults(out.Resources)
	return out, failure.Activity(err)
}

func (a *Activities) prune(ctx context.Context, in PruneInput) (PruneOutput, error) {
	t, op := in.Target, in.Operation
	d, err := a.load(ctx, t, in.Manifests, op.SyncOptions)
	if err != nil {
		return PruneOutput{}, err
	}
	candidates, err := a.pruneCandidates(ctx, d, t, op)
	if err != nil {
		return PruneOutput{}, err
	}
	if d.c, err = a.syncClients(t, d.c); err != nil {
		return PruneOutput{}, err
	}
	if in.Pass != "" {
		last := in.Pass == PrunePassLast
		candidates = slices.DeleteFunc(candidates, func(l liveObject) bool { return pruneLast(t, op, l) != last })
	}
	policy := propagation(d.opts.Is, metav1.DeletePropagationForeground)
	out := PruneOutput{Resources: make([]ResourceResult, 0, len(candidates))}
	for _, l := range candidates {
		heartbeat(ctx, len(out.Resources))
		res := ResourceResult{ResourceKey: l.key(), Phase: PhaseSync, Wave: manifest.Wave(l.obj), Action: ActionPruneSkipped}
		opts := manifest.ParseOptions(t.SyncOptions, op.SyncOptions, manifest.SyncOptionsOf(l.obj))
		switch {
		case opts.Is(optPrune, "false"):
			res.Message = notePruneDisabled
		case !op.Prune:
			res.Message = noteRequiresPruning
		case opts.Is(optPrune, "confirm") && !in.Approved:
			res.Message = confirmNote(optPrune)
			out.AwaitingApproval = append(out.AwaitingApproval, res.ResourceKey)
		default:
			if err := a.deleteTracked(ctx, d, t, l, policy, op.DryRun); err != nil {
				res.Action, res.Message = ActionFailed, err.Error()
				out.Resources = append(out.Resources, res)
				return out, apiError(err)
			}
			res.Action = ActionPruned
			if op.DryRun {
				res.Message = "dry run"
			}
			a.log.Info(msgPruned, "app", appName(t), "resource", res.String())
		}
		out.Resources = append(out.Resources, res)
	}
	if in.Pass != PrunePassLast {
		if err := a.pruneDecls(ctx, t, d, op, &out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// pruneCandidates returns the tracked live objects that are not rendered
// (and selected), in prune order.
func (a *Activities) pruneCandidates(ctx context.Context, d *desired, t Target, op SyncOperation) ([]liveObject, error) {
	tracked, err := a.listTracked(ctx, d.c, t, a.searchKinds(t, d.c, d.objs))
	if err != nil {
		return nil, err
	}
	if tracked, err = a.withArgoTracked(ctx, d.c, t, d.objs, tracked); err != nil {
		return nil, err
	}
	want := map[appspec.ResourceKey]bool{}
	for _, o := range d.objs {
		want[o.key()] = true
	}
	var out []liveObject
	for _, l := range tracked {
		if k := l.key(); !want[k] && !isLiveHook(l.obj) && selected(op, k) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, reverseSyncOrder)
	return out, nil
}

// pruneLast reports whether a prune candidate carries its own
// PruneLast=true sync option.
func pruneLast(t Target, op SyncOperation, l liveObject) bool {
	return manifest.ParseOptions(t.SyncOptions, op.SyncOptions, manifest.SyncOptionsOf(l.obj)).True(optPruneLast)
}

// propagation reads PrunePropagationPolicy from the options.
func propagation(is func(k, v string) bool, def metav1.DeletionPropagation) metav1.DeletionPropagation {
	for _, p := range []metav1.DeletionPropagation{metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan} {
		if is(optPrunePropagationPolicy, string(p)) {
			return p
		}
	}
	return def
}

// deleteTracked deletes a live object after checking once more, on the
// exact instance (UID precondition), that this app's tracking annotation
// is on it. An object already gone counts as deleted.
func (a *Activities) deleteTracked(ctx context.Context, d *desired, t Target, l liveObject, policy metav1.DeletionPropagation, dryRun bool) error {
	rc := l.client(d.c)
	cur, err := rc.Get(ctx, l.obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !owns(t, cur) {
		return fmt.Errorf("%s is not tracked by app %s any more; not deleted", describe(l.key()), appName(t))
	}
	uid := cur.GetUID()
	opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err = rc.Delete(ctx, cur.GetName(), opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func confirmNote(opt string) string { return fmt.Sprintf(noteNeedsConfirmation, opt) }
