package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// hookKinds are always searched for hooks.
var hookKinds = []schema.GroupVersionKind{
	{Group: "batch", Version: "v1", Kind: "Job"}, {Version: "v1", Kind: "Pod"},
}

const msgHookDeleted = "hook deleted"

// DeleteHooks deletes the hooks that sync SyncID created, by delete policy
// and outcome: HookSucceeded ones when the sync succeeded, HookFailed ones
// when it failed. Hooks still running when the sync failed or was
// terminated are deleted too, so that none runs on unowned; on
// termination, finished hooks follow their own result (HookSucceeded if it
// succeeded, HookFailed if it failed). It is idempotent.
func (a *Activities) DeleteHooks(ctx context.Context, in HookCleanupInput) (HookCleanupOutput, error) {
	out, err := a.deleteHooks(ctx, in)
	if err != nil {
		err = fmt.Errorf("delete hooks of sync %s: %w", in.SyncID, err)
	}
	return out, failure.Activity(err)
}

func (a *Activities) deleteHooks(ctx context.Context, in HookCleanupInput) (HookCleanupOutput, error) {
	t := in.Target
	c, d, err := a.clientsFor(ctx, t, in.Manifests)
	if err != nil {
		return HookCleanupOutput{}, err
	}
	hooks, err := a.listHooks(ctx, c, t, d.objs, in.SyncID)
	if err != nil {
		return HookCleanupOutput{}, err
	}
	out := HookCleanupOutput{Resources: []ResourceResult{}}
	for _, l := range hooks {
		h := manifest.HookOf(l.obj)
		st := a.hookHealth(l.obj).Status
		running := st != appspec.HealthHealthy && st != appspec.HealthDegraded
		var why string
		switch {
		case in.Outcome == OutcomeSucceeded && h.Deletes(manifest.DeleteOnSucceeded):
			why = "delete policy HookSucceeded"
		case in.Outcome == OutcomeFailed && !running && h.Deletes(manifest.DeleteOnFailed):
			why = "delete policy HookFailed"
		case in.Outcome != OutcomeSucceeded && running:
			why = "still running when the sync " + in.Outcome
		case in.Outcome == OutcomeTerminated && st == appspec.HealthHealthy && h.Deletes(manifest.DeleteOnSucceeded):
			why = "delete policy HookSucceeded"
		case in.Outcome == OutcomeTerminated && st == appspec.HealthDegraded && h.Deletes(manifest.DeleteOnFailed):
			why = "delete policy HookFailed"
		default:
			continue
		}
		if err := deleteInstance(ctx, l, c, metav1.DeletePropagationBackground); err != nil {
			return out, apiError(err)
		}
		phase := l.obj.GetAnnotations()[manifest.HookPhaseAnnotation]
		out.Resources = append(out.Resources, ResourceResult{
			ResourceKey: l.key(), Action: ActionDeleted, Message: why, Phase: phase, Wave: manifest.Wave(l.obj), Hook: true, Health: st,
		})
		a.log.Info(msgHookDeleted, "app", appName(t), "sync", in.SyncID, "resource", l.key().String(), "reason", why)
	}
	return out, nil
}

// listHooks lists the live hooks that syncID created for the app, in sync
// order.
func (a *Activities) listHooks(ctx context.Context, c *kube.Clients, t Target, objs []*object, syncID string) ([]liveObject, error) {
	var hookObjs []*object
	for _, o := range objs {
		if o.hook.IsHook() {
			hookObjs = append(hookObjs, o)
		}
	}
	kinds := a.searchKinds(t, c, hookObjs, hookKinds...)
	hooks, _, err := a.listSelected(ctx, c, kinds, manifest.SyncIDLabel+"="+manifest.SyncIDHash(syncID), nil, func(u *unstructured.Unstructured) bool {
		return u.GetAnnotations()[manifest.SyncIDAnnotation] == syncID && manifest.OwnedBy(t.Project, t.App, u)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(hooks, func(x, y liveObject) int {
		px := manifest.PhaseRank(x.obj.GetAnnotations()[manifest.HookPhaseAnnotation])
		py := manifest.PhaseRank(y.obj.GetAnnotations()[manifest.HookPhaseAnnotation])
		if px != py {
			return px - py
		}
		if manifest.Less(x.obj, y.obj) {
			return -1
		}
		if manifest.Less(y.obj, x.obj) {
			return 1
		}
		return 0
	})
	return hooks, nil
}

// clientsFor returns the destination's clients and, when ref is set, the
// app's desired objects (an empty set otherwise).
func (a *Activities) clientsFor(ctx context.Context, t Target, ref *render.ManifestRef) (*kube.Clients, *desired, error) {
	if ref != nil {
		d, err := a.load(ctx, t, *ref, nil)
		if err != nil {
			return nil, nil, err
		}
		return d.c, d, nil
	}
	c, err := a.clusters.For(t.Destination.Server)
	if err != nil {
		return nil, nil, err
	}
	return c, &desired{c: c}, nil
}

// reverseSyncOrder orders live objects for deletion: the reverse of the
// apply order (highest wave first, then reverse kind order).
func reverseSyncOrder(x, y liveObject) int {
	switch {
	case manifest.Less(x.obj, y.obj):
		return 1
	case manifest.Less(y.obj, x.obj):
		return -1
	}
	return 0
}

// deleteInstance deletes exactly the live instance l (UID precondition);
// one already gone counts as deleted.
func deleteInstance(ctx context.Context, l liveObject, c *kube.Clients, policy metav1.DeletionPropagation) error {
	uid := l.obj.GetUID()
	err := l.client(c).Delete(ctx, l.obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || (apierrors.IsConflict(err) && uid != "") {
		return nil
	}
	return err
}

const msgAppDeleted = "app resources deleted"

// DeleteApp deletes every live object tracked for the app (in reverse
// sync order) with the cascade policy: foreground deletes and watches until
// every object is gone, background returns after the delete calls, orphan
// only removes the tracking annotation and the app label. Delete=false on a
// resource keeps it; Delete=confirm keeps it, unless the deletion is
// Approved or orphans, and lists it in AwaitingApproval, and then the
// PostDelete hooks wait for the approved call. Otherwise, when Manifests is set, the PostDelete hooks run wave by
// wave (applied, awaited through watches) and are deleted by their policy;
// a failed hook is reported in Failed and Message. The hooks are checked
// against Project first (forbidden ones fail with a non-retryable
// ForbiddenError). The output lists at most MaxResults resources.
func (a *Activities) DeleteApp(ctx context.Context, in DeleteAppInput) (DeleteAppOutput, error) {
	out, err := a.deleteApp(ctx, in)
	if err != nil && ctx.Err() == nil {
		err = failure.Activity(fmt.Errorf("delete app %s: %w", appName(in.Target), err))
	}
	// Hooks, failures and the resources kept are the ones to show.
	out.Resources, out.Omitted = bound(out.Resources, func(r ResourceResult) bool {
		return r.Hook || r.Action == ActionFailed || r.Action == ActionHookFailed || r.Action == ActionDeleteSkipped
	})
	return out, err
}

func (a *Activities) deleteApp(ctx context.Context, in DeleteAppInput) (DeleteAppOutput, error) {
	t := in.Target
	syncID := in.SyncID
	if syncID == "" {
		syncID = "delete/" + appName(t)
	}
	c, d, err := a.clientsFor(ctx, t, in.Manifests)
	if err != nil {
		return DeleteAppOutput{}, err
	}
	tracked, err := a.listTracked(ctx, c, t, a.searchKinds(t, c, d.objs, hookKinds...))
	if err != nil {
		return DeleteAppOutput{}, err
	}
	if tracked, err = a.withArgoTracked(ctx, c, t, d.objs, tracked); err != nil {
		return DeleteAppOutput{}, err
	}
	slices.SortFunc(tracked, reverseSyncOrder)
	policy := metav1.DeletePropagationForeground
	if in.Cascade == CascadeBackground {
		policy = metav1.DeletePropagationBackground
	}
	out := DeleteAppOutput{Resources: []ResourceResult{}}
	var deleted []liveObject
	for _, l := range tracked {
		if manifest.CreatedBy(l.obj, syncID, PhasePostDelete) {
			continue // a PostDelete hook of an earlier attempt
		}
		res := ResourceResult{ResourceKey: l.key(), Wave: manifest.Wave(l.obj), Hook: isLiveHook(l.obj)}
		opts := manifest.ParseOptions(t.SyncOptions, manifest.SyncOptionsOf(l.obj))
		switch {
		case opts.Is(optDelete, "false"):
			res.Action, res.Message = ActionDeleteSkipped, "kept: sync option Delete=false"
		case opts.Is(optDelete, "confirm") && !in.Approved && in.Cascade != CascadeOrphan:
			res.Action, res.Message = ActionDeleteSkipped, confirmNote(optDelete)
			out.AwaitingApproval = append(out.AwaitingApproval, res.ResourceKey)
		case in.Cascade == CascadeOrphan:
			if err := untrack(ctx, c, l); err != nil {
				return out, apiError(err)
			}
			res.Action, res.Message = ActionOrphaned, "tracking removed; resource left in place"
		default:
			if err := deleteInstance(ctx, l, c, policy); err != nil {
				return out, apiError(err)
			}
			res.Action, res.Message = ActionDeleted, string(policy)
			deleted = append(deleted, l)
		}
		out.Resources = append(out.Resources, res)
		heartbeat(ctx, waveProgress{})
	}
	if in.Cascade != CascadeOrphan && len(out.AwaitingApproval) == 0 {
		if err := a.deleteDecls(ctx, t, &out); err != nil {
			return out, err
		}
	}
	if policy == metav1.DeletePropagationForeground && in.Cascade != CascadeOrphan && len(deleted) > 0 {
		if err := a.waitDeleted(ctx, c, t, deleted); err != nil {
			return out, err
		}
	}
	a.log.Info(msgAppDeleted, "app", appName(t), "cascade", in.Cascade, "resources", len(out.Resources), "awaitingApproval", len(out.AwaitingApproval))
	if in.Manifests == nil || len(out.AwaitingApproval) > 0 {
		return out, nil
	}
	return a.postDelete(ctx, d, t, in.Project, syncID, out)
}

// untrack removes the tracking annotation and the app label (orphan).
func untrack(ctx context.Context, c *kube.Clients, l liveObject) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null},"labels":{%q:null}}}`, manifest.TrackingAnnotation, manifest.AppLabel)
	_, err := l.client(c).Patch(ctx, l.obj.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitDeleted watches the deleted objects until every one is gone.
func (a *Activities) waitDeleted(ctx context.Context, c *kube.Clients, t Target, deleted []liveObject) error {
	deleted, err := waitUnlabelled(ctx, c, t, deleted)
	if err != nil {
		return err
	}
	w := newWatchSet(c, manifest.AppLabel+"="+manifest.AppLabelValue(t.Project, t.App))
	for _, l := range deleted {
		w.add(l.kind.gvr, l.kind.namespaced, l.obj.GetNamespace())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := w.start(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		left := 0
		for _, l := range deleted {
			if cur := w.get(l.kind.gvr, l.kind.namespaced, l.obj.GetNamespace(), l.obj.GetName()); cur != nil && cur.GetUID() == l.obj.GetUID() {
				left++
			}
		}
		heartbeat(ctx, left)
		if left == 0 {
			return nil
		}
		select {
		case <-w.changed:
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// postDelete runs the PostDelete hooks wave by wave, then deletes them by
// policy.
func (a *Activities) postDelete(ctx context.Context, d *desired, t Target, project *appspec.Project, syncID string, out DeleteAppOutput) (DeleteAppOutput, error) {
	var hooks []*object
	for _, o := range d.objs {
		if o.hook.In(PhasePostDelete) && !o.hook.Skip {
			hooks = append(hooks, o.forPhase(t, syncID, PhasePostDelete))
		}
	}
	if len(hooks) == 0 {
		return out, nil
	}
	if err := d.validate(t, project, hooks); err != nil {
		return out, err
	}
	sortObjects(hooks)
	op := SyncOperation{SyncID: syncID}
	prog := resumeProgress(ctx)
	outcome := OutcomeSucceeded
	for start := 0; start < len(hooks); {
		end := start + 1
		for end < len(hooks) && hooks[end].wave == hooks[start].wave {
			end++
		}
		res, _, err := a.applyObjects(ctx, d, t, op, hooks[start:end])
		out.Resources = append(out.Resources, res...)
		if err != nil {
			return out, err
		}
		wave, err := a.waitObjects(ctx, d, t, hooks[start:end], &prog)
		if err != nil {
			return out, err
		}
		out.Resources = append(out.Resources, wave.Resources...)
		if wave.Failed != nil {
			out.Failed, out.Message, outcome = wave.Failed, wave.Message, OutcomeFailed
			break
		}
		start = end
	}
	cleanup, err := a.deleteHooks(ctx, HookCleanupInput{Target: t, SyncID: syncID, Outcome: outcome})
	out.Resources = append(out.Resources, cleanup.Resources...)
	return out, err
}
