package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

const (
	msgApplied = "resource applied"
	msgWave    = "wave applied"
)

// ApplyWave applies the resources and hooks of one step in kind order, then
// name. Resources are server-side applied (field manager windlass, force);
// hooks are created fresh, named for the sync so that a retry finds the
// hook it already created. The output is the ordered per-resource log.
func (a *Activities) ApplyWave(ctx context.Context, in WaveInput) (WaveOutput, error) {
	d, err := a.load(ctx, in.Target, in.Manifests, in.Operation.SyncOptions)
	if err == nil {
		d.c, err = a.syncClients(in.Target, d.c)
	}
	if err != nil {
		return WaveOutput{}, failure.Activity(fmt.Errorf("apply wave %s %d of %s: %w", in.Step.Phase, in.Step.Wave, appName(in.Target), err))
	}
	steps, _ := d.expand(in.Target, in.Operation)
	objs := inStep(steps, in.Step)
	res, after, err := a.applyObjects(ctx, d, in.Target, in.Operation, objs)
	out := WaveOutput{Resources: res}
	if err != nil {
		err = fmt.Errorf("apply wave %s %d of %s: %w", in.Step.Phase, in.Step.Wave, appName(in.Target), err)
	} else {
		a.log.Info(msgWave, "app", appName(in.Target), "phase", in.Step.Phase, "wave", in.Step.Wave, "resources", len(res))
		health := a.appliedHealth(res, after)
		if a.settles(ctx, d, in.Target, objs, after, health, a.settleFor(in)) {
			out.Settled, out.Health = true, appspec.HealthHealthy
		}
		for i := range res {
			if health[i] != "" && out.Settled {
				health[i] = appspec.HealthHealthy
			}
			res[i].Health = health[i]
			if !out.Settled && health[i] != "" && health[i] != appspec.HealthSuspended {
				out.Health = worseHealth(out.Health, health[i])
			}
		}
	}
	out.Resources, out.Omitted = boundResults(out.Resources)
	return out, failure.Activity(err)
}

// appliedHealth is the health of each applied resource as its apply left
// it ("" for a hook or an object without such a state), so that the app
// can show what a wave applied before the wave is waited for.
func (a *Activities) appliedHealth(res []ResourceResult, after []*unstructured.Unstructured) []appspec.HealthStatus {
	out := make([]appspec.HealthStatus, len(res))
	for i, obj := range after {
		if obj != nil && !res[i].Hook {
			out[i] = a.health.Assess(obj).Status
		}
	}
	return out
}

func worseHealth(a, b appspec.HealthStatus) appspec.HealthStatus {
	if a == "" {
		return b
	}
	return appspec.Worse(a, b)
}

// settleFor is how long ApplyWave watches in's wave settle: the settle
// wait, no longer than in.SettleMillis when that is set.
func (a *Activities) settleFor(in WaveInput) time.Duration {
	if in.SettleMillis > 0 {
		return min(a.settleWait, time.Duration(in.SettleMillis)*time.Millisecond)
	}
	return a.settleWait
}

// settles says whether every applied object is done: healthy or
// suspended, as WaitWave's first look at it would find, as its apply
// (after, of the given health) left it or within the settle wait, for which it watches the
// others. A wave with a hook, a dry run or a failed apply (a nil in
// after: no such state) never settles, nor does one with an object that
// degrades or whose health script fails: its WaitWave reports that.
func (a *Activities) settles(ctx context.Context, d *desired, t Target, objs []*object, after []*unstructured.Unstructured, health []appspec.HealthStatus, wait time.Duration) bool {
	if len(objs) == 0 || slices.Contains(after, nil) {
		return false
	}
	var pending []int // indexes into objs and after
	for i := range after {
		if !done(health[i]) {
			pending = append(pending, i)
		}
	}
	switch {
	case len(pending) == 0:
		return true
	case wait <= 0 || slices.ContainsFunc(pending, func(i int) bool { return objs[i].mapping == nil }):
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w := newLiveWatch(d.c, manifest.AppLabel+"="+manifest.AppLabelValue(t.Project, t.App))
	for _, i := range pending {
		o := objs[i]
		w.add(o.mapping.Resource, o.namespaced(), o.obj.GetNamespace())
	}
	if err := w.start(ctx); err != nil {
		return false
	}
	// Heartbeat while nothing changes too: the apply's heartbeat timeout
	// (1 min) is no longer than the wait.
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		all := true
		for _, i := range pending {
			o := objs[i]
			live := notBefore(w.get(o.mapping.Resource, o.namespaced(), o.obj.GetNamespace(), o.obj.GetName()), after[i])
			h := a.health.Assess(live)
			if h.Status == appspec.HealthDegraded || h.ScriptError {
				return false
			}
			all = all && done(h.Status)
		}
		if all {
			return true
		}
		heartbeat(ctx, len(objs)) // all applied
		select {
		case <-w.changed:
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}

// notBefore is live, the state a watch has of an object, unless it
// predates applied, the object as its apply left it (a lower generation):
// then nil, which reads as pending. A watch's first events can come from
// the API server's watch cache before that has caught up with the apply,
// and the object's state from before the apply (its rollout done, its
// status observing the old generation) would read as healthy: the wave
// would settle on the old state, and the app stay Progressing after the
// sync until its next pass.
func notBefore(live, applied *unstructured.Unstructured) *unstructured.Unstructured {
	if live == nil || live.GetGeneration() < applied.GetGeneration() {
		return nil
	}
	return live
}

// applyObjects applies sorted objects: objects of one kind in parallel,
// kinds one after the other, hooks one by one. It stops at the first kind
// with a failure and returns the results so far, and each object's state
// after its apply (nil for a hook, a dry run or a failure).
func (a *Activities) applyObjects(ctx context.Context, d *desired, t Target, op SyncOperation, objs []*object) ([]ResourceResult, []*unstructured.Unstructured, error) {
	if len(objs) == 0 {
		return nil, nil, nil
	}
	var created string
	if d.opts.True(optCreateNamespace) && t.Destination.Namespace != "" && !op.DryRun {
		fresh, err := ensureNamespace(ctx, d.c, t.Destination.Namespace, t.ManagedNamespaceMetadata)
		if err != nil {
			return nil, nil, err
		}
		if fresh {
			created = t.Destination.Namespace
		}
	}
	idx, err := a.liveOf(ctx, d.c, t, objs, created)
	if err != nil {
		return nil, nil, err
	}
	out := make([]ResourceResult, len(objs))
	after := make([]*unstructured.Unstructured, len(objs))
	for start := 0; start < len(objs); {
		end := start + 1
		for end < len(objs) && !objs[start].hook.IsHook() && sameGroup(objs[start], objs[end]) {
			end++
		}
		group := objs[start:end]
		err := parallel(ctx, len(group), a.concurrency, func(ctx context.Context, i int) error {
			return a.bounded(ctx, func() error {
				r, obj, err := a.applyOne(ctx, d, t, op, group[i], idx)
				out[start+i], after[start+i] = r, obj
				return err
			})
		})
		heartbeat(ctx, end)
		if err != nil {
			return out[:end], after[:end], err
		}
		start = end
	}
	for _, r := range out {
		a.log.Debug(msgApplied, "resource", r.String(), "action", r.Action)
	}
	return out, after, nil
}

// maxWaveGets is the most objects of a wave whose live state is read by
// GET, each, rather than by listing their kinds: a list is a consistent
// read that waits until the API server's cache of the kind has caught up
// with etcd (up to its next progress notification, 100 ms, while other
// kinds are written, as when a controller reacts to an edit that a
// self-heal sync undoes), where a GET is read from etcd at once; a large
// wave takes fewer requests listed.
const maxWaveGets = 16

// liveOf reads the live state of the objects to apply, keyed as getLive
// looks them up: by GET for a small wave (an absent object has a nil
// entry), else by listing the app's objects in their kinds. Objects not
// mapped yet or without a name are left to getLive. The objects in
// namespace created, which this apply has just created, are absent
// without a GET: nothing could be in it before (someone creating one in
// the moment since is the race any read before a write has).
func (a *Activities) liveOf(ctx context.Context, c *kube.Clients, t Target, objs []*object, created string) (map[appspec.ResourceKey]liveObject, error) {
	var named, absent []*object
	for _, o := range objs {
		switch {
		case o.mapping == nil || o.obj.GetName() == "": // mapped when applied
		case created != "" && o.namespaced() && o.obj.GetNamespace() == created:
			absent = append(absent, o)
		default:
			named = append(named, o)
		}
	}
	idx := make(map[appspec.ResourceKey]liveObject, len(named)+len(absent))
	for _, o := range absent {
		idx[o.key()] = liveObject{kind: refOf(o.mapping)}
	}
	if len(named) > maxWaveGets {
		var kinds []kindRef
		for _, o := range named {
			kinds = append(kinds, refOf(o.mapping))
		}
		tracked, err := a.listTracked(ctx, c, t, dedupe(kinds))
		if err != nil {
			return nil, err
		}
		for _, l := range tracked {
			if _, ok := idx[l.key()]; !ok {
				idx[l.key()] = l
			}
		}
		return idx, nil
	}
	lives := make([]*unstructured.Unstructured, len(named))
	err := parallel(ctx, len(named), a.concurrency, func(ctx context.Context, i int) error {
		return holding(ctx, a.reads, func() (err error) {
			lives[i], err = getLive(ctx, c, named[i], nil)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	for i, o := range named {
		idx[o.key()] = liveObject{obj: lives[i], kind: refOf(o.mapping)}
	}
	return idx, nil
}

func sameGroup(a, b *object) bool {
	return !b.hook.IsHook() && a.phase == b.phase && a.wave == b.wave && a.obj.GetKind() == b.obj.GetKind()
}

func dedupe(kinds []kindRef) []kindRef {
	seen := map[schema.GroupResource]bool{}
	var out []kindRef
	for _, k := range kinds {
		if !seen[k.gvr.GroupResource()] {
			seen[k.gvr.GroupResource()] = true
			out = append(out, k)
		}
	}
	return out
}

// applyOne applies one object and says what it did, with the object's
// state after the apply (nil for a hook, a dry run or a failure).
func (a *Activities) applyOne(ctx context.Context, d *desired, t Target, op SyncOperation, o *object, idx map[appspec.ResourceKey]liveObject) (ResourceResult, *unstructured.Unstructured, error) {
	if o.decl {
		return a.applyDecl(ctx, t, op, o)
	}
	res := o.result(ActionFailed, "")
	fail := func(err error) (ResourceResult, *unstructured.Unstructured, error) {
		res.Action, res.Message = ActionFailed, err.Error()
		return res, nil, err
	}
	if err := d.awaitKind(ctx, o); err != nil {
		return fail(err)
	}
	live, err := getLive(ctx, d.c, o, idx)
	if err != nil {
		return fail(err)
	}
	var notes []string
	if o.hook.IsHook() {
		if live != nil && manifest.CreatedBy(live, op.SyncID, o.phase) {
			res.Action, res.Message = ActionUnchanged, "hook already created by this sync"
			return res, nil, nil
		}
		if live != nil && o.hook.Deletes(manifest.DeleteBeforeHookCreation) && op.DryRun {
			res.Action, res.Message = ActionCreated, "hook "+o.phase+"; dry run: the previous instance would be deleted first (BeforeHookCreation)"
			return res, nil, nil
		}
		if live != nil && o.hook.Deletes(manifest.DeleteBeforeHookCreation) {
			if err := deleteAndWait(ctx, o.client(d.c), live); err != nil {
				return fail(fmt.Errorf("delete previous hook %s: %w", describe(o.key()), err))
			}
			live = nil
			notes = append(notes, "previous instance deleted (BeforeHookCreation)")
		}
	} else if live != nil {
		if owner := otherOwner(t, live); owner != "" {
			if o.opts.True(optFailOnSharedResource) {
				return fail(fmt.Errorf("%w: %s is tracked by %s (FailOnSharedResource=true)", ErrSharedResource, describe(o.key()), owner))
			}
			notes = append(notes, "shared resource: was tracked by "+owner)
			a.log.Warn(msgSharedResource, "resource", o.key().String(), "owner", owner, "app", appName(t))
		}
		if managers := csaManagers(live); len(managers) > 0 && !o.opts.True(optReplace) {
			if op.DryRun {
				notes = append(notes, "fields of client-side apply ("+strings.Join(managers, ", ")+") would move to "+FieldManager)
			} else {
				if live, err = takeOverFields(ctx, o.client(d.c), live, managers); err != nil {
					return fail(apiError(fmt.Errorf("take over fields of %s from %s: %w", describe(o.key()), strings.Join(managers, ", "), err)))
				}
				notes = append(notes, "fields of client-side apply ("+strings.Join(managers, ", ")+") moved to "+FieldManager)
			}
		}
	}
	want := o.obj
	set, _ := a.ignoreFor(t, o.key())
	if live != nil && !o.hook.IsHook() {
		if o.opts.True(optApplyOutOfSyncOnly) {
			synced, _, err := a.diffOne(ctx, d, t, o, live, set, false)
			if err == nil && synced {
				res.Action, res.Message = ActionUnchanged, joinNotes(append(notes, "in sync; not applied (ApplyOutOfSyncOnly)"))
				return res, live, nil
			}
		}
		if o.opts.True(optRespectIgnoreDifferences) && !set.empty() {
			want = respectIgnored(want, live, set)
		}
	}
	if a.noop(op, o, want, live) {
		res.Action, res.Message = ActionUnchanged, joinNotes(append(notes, "in sync; nothing to apply"))
		return res, live, nil
	}
	after, recreated, err := a.write(ctx, d.c, o, want, live, op.DryRun)
	if err != nil {
		return fail(apiError(err))
	}
	if recreated {
		notes = append(notes, "deleted and recreated (Force=true): an immutable field changed")
	}
	switch {
	case live == nil || recreated:
		res.Action = ActionCreated
	case op.DryRun:
		res.Action = ActionUnchanged
		managed := live.GetManagedFields()
		if !equalNormalized(normalize(live, managed, set), normalize(after, managed, set)) {
			res.Action = ActionConfigured
		}
	case live.GetResourceVersion() != after.GetResourceVersion():
		res.Action = ActionConfigured
	default:
		res.Action = ActionUnchanged
	}
	if o.hook.IsHook() {
		notes = append([]string{"hook " + o.phase}, notes...)
	}
	if op.DryRun {
		notes = append(notes, "dry run")
	}
	res.Message = joinNotes(notes)
	if op.DryRun || o.hook.IsHook() {
		return res, nil, nil
	}
	return res, after, nil
}

const msgSharedResource = "resource tracked by another app"

// noop says whether server-side applying want onto live would change
// nothing, so that the request can be skipped: the dry-run cache holds
// the result of this very apply on this exact live state (UID and
// resourceVersion: Compare's dry run, or the last real apply), and that
// result is live itself. The API server would answer such an apply with
// the object unchanged; a re-sync of an app in sync then costs no write.
// Hooks, dry runs and Replace=true always send.
func (a *Activities) noop(op SyncOperation, o *object, want, live *unstructured.Unstructured) bool {
	if op.DryRun || live == nil || o.hook.IsHook() || o.opts.True(optReplace) {
		return false
	}
	r := a.dryRuns.get(want, live)
	return r != nil && equality.Semantic.DeepEqual(r.Object, live.Object)
}

// write sends the object: a server-side apply, or a replace/create with
// Replace=true. With Force=true an update refused for an immutable field
// deletes the object and creates it again.
func (a *Activities) write(ctx context.Context, c *kube.Clients, o *object, want, live *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, bool, error) {
	rc := o.client(c)
	send := func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		a.applyRequest(dryRun)
		if !o.opts.True(optReplace) {
			return serverSideApply(ctx, rc, o, want, live, dryRun)
		}
		var dry []string
		if dryRun {
			dry = []string{metav1.DryRunAll}
		}
		if live == nil {
			return rc.Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager, DryRun: dry, FieldValidation: fieldValidation(o)})
		}
		u := want.DeepCopy()
		u.SetResourceVersion(live.GetResourceVersion())
		return rc.Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dry, FieldValidation: fieldValidation(o)})
	}
	after, err := send(live)
	if err == nil && !dryRun && !o.opts.True(optReplace) {
		a.dryRuns.put(want, nil, after)
	}
	if err == nil || live == nil || !immutable(err) || !o.opts.True(optForce) || dryRun {
		return after, false, err
	}
	if err := deleteAndWait(ctx, rc, live); err != nil {
		return nil, false, err
	}
	after, err = send(nil)
	return after, err == nil, err
}

// fieldValidation is Strict, or Ignore with Validate=false.
func fieldValidation(o *object) string {
	if o.opts.Is(optValidate, "false") {
		return "Ignore"
	}
	return "Strict"
}

// serverSideApply applies want as field manager windlass, taking over
// conflicting fields (force), optionally as a dry run. Server-side apply
// refuses fields its schema does not declare whatever the validation, so
// with Validate=false such an object is sent as a JSON merge patch onto
// live (or created) with unknown fields dropped, as kubectl apply
// --validate=false would.
func serverSideApply(ctx context.Context, rc dynamic.ResourceInterface, o *object, want, live *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	body, err := want.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	force := true
	out, err := rc.Patch(ctx, want.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		FieldManager: FieldManager, Force: &force, FieldValidation: fieldValidation(o), DryRun: dry,
	})
	if err == nil || !schemaRejected(err) || fieldValidation(o) != "Ignore" {
		return out, err
	}
	if live == nil {
		return rc.Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager, FieldValidation: "Ignore", DryRun: dry})
	}
	return rc.Patch(ctx, want.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager, FieldValidation: "Ignore", DryRun: dry})
}

func equalNormalized(a, b map[string]any) bool { return unifiedDiff(a, b) == "" }

func joinNotes(notes []string) string {
	out := ""
	for _, n := range notes {
		if out != "" {
			out += "; "
		}
		out += n
	}
	return out
}

// deleteAndWait deletes obj (background propagation, only this very
// object) and watches until it is gone.
func deleteAndWait(ctx context.Context, rc dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	uid := obj.GetUID()
	bg := metav1.DeletePropagationBackground
	err := rc.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return waitGone(ctx, rc, obj.GetName(), uid)
}

// waitGone watches one object until the instance with uid no longer exists.
func waitGone(ctx context.Context, rc dynamic.ResourceInterface, name string, uid types.UID) error {
	for {
		cur, err := rc.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.GetUID() != uid {
			return nil
		}
		w, err := rc.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: cur.GetResourceVersion(),
		})
		if err != nil {
			return err
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				gone = true
				break
			}
		}
		w.Stop()
		if gone {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// namespacesGVR is the Namespaces' resource.
var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// ensureNamespace creates the destination namespace when it is missing and
// applies the managed namespace metadata to it. It says whether it found
// the namespace missing (only known when there is no metadata to apply,
// which is applied without a look first).
func ensureNamespace(ctx context.Context, c *kube.Clients, name string, md *appspec.ManagedNamespaceMetadata) (bool, error) {
	nsRes := c.Dynamic.Resource(namespacesGVR)
	missing := false
	if md == nil || len(md.Labels)+len(md.Annotations) == 0 {
		_, err := nsRes.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return false, nil
		case !apierrors.IsNotFound(err):
			return false, fmt.Errorf("get namespace %s: %w", name, err)
		}
		missing = true
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if md != nil {
		ns.SetLabels(maps.Clone(md.Labels))
		ns.SetAnnotations(maps.Clone(md.Annotations))
	}
	if _, err := nsRes.Apply(ctx, name, ns, metav1.ApplyOptions{FieldManager: FieldManager}); err != nil {
		return false, apiError(fmt.Errorf("create namespace %s: %w", name, err))
	}
	return missing, nil
}

// done says whether a wave need not wait for an object of this health.
func done(s appspec.HealthStatus) bool {
	return s == appspec.HealthHealthy || s == appspec.HealthSuspended
}
