package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Compare compares desired and live state and assesses health. Each
// rendered resource (hooks are left out) is Synced or OutOfSync (Missing
// when absent); a dry run the server refuses (a CRD not installed yet, a
// namespace that CreateNamespace will create) makes it OutOfSync with the
// reason, never Synced. Live objects tracked for the app that are no
// longer rendered are listed with RequiresPruning; they make the app
// OutOfSync unless they carry compare-options IgnoreExtraneous. With
// WithDiff each differing resource carries a unified diff. With
// WithHealthLog it records the health transitions it finds.
func (a *Activities) Compare(ctx context.Context, in CompareInput) (CompareOutput, error) {
	out, err := a.compare(ctx, in, true, nil)
	if err == nil {
		a.recordHealth(ctx, in.Target, out)
	}
	return a.boundCompare(ctx, in.Target, out), failure.Activity(err)
}

// comparedPair is one compared resource's live and desired object (either
// nil when absent), in the order of CompareOutput.Resources.
type comparedPair struct{ live, desired *unstructured.Unstructured }

// compare reads the live objects and assesses their health; with dryRun
// it also compares each with a server-side-apply dry run of the desired one.
// When pairs is not nil it receives the objects compared.
func (a *Activities) compare(ctx context.Context, in CompareInput, dryRun bool, pairs *[]comparedPair) (CompareOutput, error) {
	t := in.Target
	// The reconcile loop's compares are memoised (compareMemo); memo
	// says whether this one's answer may be kept.
	eligible := dryRun && !in.WithDiff && pairs == nil && t.ArgoCD == nil
	memo := eligible
	var input [sha256.Size]byte
	if memo {
		input, memo = inputDigest(in)
	}
	// since: the versions the memo's metadata lists answered at, which
	// the full lists need not wait for again (listPaged); gotten: when
	// got, the live objects a Drift compare read by GET instead.
	var (
		since  listRVs
		gotten []liveObject
		got    bool
	)
	if e, ok := a.memo.get(appKey(t), input); ok && memo && !in.Fresh {
		c, err := a.clusters.For(t.Destination.Server)
		if err != nil {
			return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
		}
		if in.Drift && e.known != nil {
			// A failed GET leaves the answer to the lists.
			if gotten, err = a.getKnown(ctx, c, t, e.known); err == nil {
				if liveDigest(gotten) == e.live {
					rememberLive(a, t, gotten, func(l liveObject) kindRef { return l.kind })
					return e.answer(), nil
				}
				got = true
			}
		}
		if !got {
			kinds, err := a.knownKinds(ctx, t, c, e.kinds)
			if err != nil {
				return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
			}
			// A failed metadata list leaves the answer to the full
			// compare, whose own lists report what fails.
			metas, rvs, err := a.listTrackedMeta(ctx, c, t, kinds)
			if err == nil && metaDigest(metas) == e.live {
				rememberLive(a, t, metas, func(m metaObject) kindRef { return m.kind })
				return e.answer(), nil
			}
			since = rvs
		}
	}
	d, err := a.load(ctx, t, in.Manifests, nil)
	if err != nil {
		return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
	}
	tracked := gotten
	if !got {
		kinds, err := a.compareKinds(ctx, t, d, in.WithDiff || pairs != nil)
		if err != nil {
			return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
		}
		if tracked, err = a.listTrackedSince(ctx, d.c, t, kinds, since); err != nil {
			return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
		}
		if tracked, err = a.withArgoTracked(ctx, d.c, t, d.objs, tracked); err != nil {
			return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
		}
	}
	rememberLive(a, t, tracked, func(l liveObject) kindRef { return l.kind })
	idx := liveIndex(tracked)
	res := d.resources()
	sortObjects(res)
	for _, o := range res {
		if _, ok := idx[o.key()]; !ok || o.mapping == nil {
			memo = false // found by a GET, or not at all: see compareMemo
		}
	}
	a.absentInNewNamespace(ctx, d, t, res, idx)
	statuses := make([]appspec.ResourceStatus, len(res))
	lives := make([]*unstructured.Unstructured, len(res))
	err = parallel(ctx, len(res), a.concurrency, func(ctx context.Context, i int) error {
		if res[i].decl {
			var err error
			statuses[i], err = a.compareDecl(ctx, t, res[i])
			return err
		}
		live, err := getLive(ctx, d.c, res[i], idx)
		if err != nil {
			return err
		}
		lives[i] = live
		statuses[i], err = a.compareOne(ctx, d, t, res[i], live, dryRun, in.WithDiff)
		return err
	})
	if err != nil {
		return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
	}
	out := CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy, Resources: statuses, Conditions: excludedConditions(d.excluded)}
	if !dryRun {
		out.Sync = appspec.SyncUnknown
	}
	for _, rs := range statuses {
		if dryRun && rs.Status != appspec.SyncSynced {
			out.Sync = appspec.SyncOutOfSync
		}
		out.Health = appspec.Worse(out.Health, rs.Health)
	}
	extra := a.extraneous(t, d, tracked, in.WithDiff)
	declared, err := a.declaredExtra(ctx, t, d, true)
	if err != nil {
		return CompareOutput{}, fmt.Errorf("compare %s: %w", appName(t), err)
	}
	for _, s := range declared {
		extra = append(extra, extraStatus(s))
	}
	for _, rs := range extra {
		if rs.Message != msgIgnoredExtraneous && dryRun {
			out.Sync = appspec.SyncOutOfSync
		}
		out.Health = appspec.Worse(out.Health, rs.Health)
		out.Resources = append(out.Resources, rs)
	}
	if pairs != nil {
		for i, o := range res {
			*pairs = append(*pairs, comparedPair{live: lives[i], desired: o.obj})
		}
		for _, rs := range extra {
			*pairs = append(*pairs, comparedPair{live: idx[rs.ResourceKey].obj})
		}
	}
	switch {
	case memo:
		a.memo.put(appKey(t), compareMemoEntry{input: input, kinds: manifestKinds(d.objs), live: liveDigest(tracked), out: out,
			known: knownOf(tracked)})
	case eligible:
		a.memo.forget(appKey(t))
	}
	return out, nil
}

// absentInNewNamespace spares the GETs of the desired objects the lists
// did not find when the destination namespace is one CreateNamespace has
// yet to create, as before an app's first sync: where two or more of them
// are in it, it reads the namespace instead, and when that is missing it
// adds them to idx as absent. Any other answer (forbidden, say) leaves
// them to their GETs.
func (a *Activities) absentInNewNamespace(ctx context.Context, d *desired, t Target, res []*object, idx map[appspec.ResourceKey]liveObject) {
	ns := t.Destination.Namespace
	if ns == "" || !d.opts.True(optCreateNamespace) {
		return
	}
	var unfound []*object
	for _, o := range res {
		if _, ok := idx[o.key()]; !ok && o.mapping != nil && o.namespaced() && o.obj.GetNamespace() == ns {
			unfound = append(unfound, o)
		}
	}
	if len(unfound) < 2 {
		return
	}
	err := holding(ctx, a.reads, func() error {
		_, err := d.c.Dynamic.Resource(namespacesGVR).Get(ctx, ns, metav1.GetOptions{})
		return err
	})
	if !apierrors.IsNotFound(err) {
		return
	}
	for _, o := range unfound {
		idx[o.key()] = liveObject{kind: refOf(o.mapping)}
	}
}

// rememberLive adds the kinds of the app's live objects (full or
// metadata) to those seen for it.
func rememberLive[T any](a *Activities, t Target, live []T, kind func(T) kindRef) {
	kinds := make([]kindRef, 0, len(live))
	for _, l := range live {
		kinds = append(kinds, kind(l))
	}
	a.kinds.rememberKinds(t, dedupe(kinds))
}

// getKnown reads the objects known from the app's last lists by GET, in
// parallel, keeping those still there and still the app's (owns). It finds no
// object that the lists did not: the watch asks for a Drift compare when
// a tracked object changed or went, and for a listing one when another
// writer created (or labelled) an object for the app.
func (a *Activities) getKnown(ctx context.Context, c *kube.Clients, t Target, known []knownObject) ([]liveObject, error) {
	found := make([]*unstructured.Unstructured, len(known))
	err := parallel(ctx, len(known), a.concurrency, func(ctx context.Context, i int) error {
		k := known[i]
		return holding(ctx, a.reads, func() error {
			u, err := resourceClient(c, k.kind.gvr, k.kind.namespaced, k.namespace).Get(ctx, k.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("get %s %s/%s: %w", k.kind.gvr.Resource, k.namespace, k.name, err)
			}
			if u.GetKind() == "" {
				u.SetGroupVersionKind(k.kind.gvk)
			}
			if owns(t, u) {
				found[i] = u
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	var out []liveObject
	for i, u := range found {
		if u != nil {
			out = append(out, liveObject{obj: u, kind: known[i].kind})
		}
	}
	return out, nil
}

const msgIgnoredExtraneous = "not rendered any more; ignored (compare-options IgnoreExtraneous)"

// extraneous returns the statuses of tracked live objects that are no
// longer rendered (hooks excepted), in key order. Those with
// IgnoreExtraneous carry msgIgnoredExtraneous and do not make the app
// OutOfSync.
func (a *Activities) extraneous(t Target, d *desired, tracked []liveObject, withDiff bool) []appspec.ResourceStatus {
	want := map[appspec.ResourceKey]bool{}
	for _, o := range d.objs {
		want[o.key()] = true
	}
	var out []appspec.ResourceStatus
	for _, l := range tracked {
		if want[l.key()] || isLiveHook(l.obj) {
			continue
		}
		h := a.health.Assess(l.obj)
		rs := appspec.ResourceStatus{
			ResourceKey: l.key(), Version: l.kind.gvk.Version, Status: appspec.SyncOutOfSync,
			Health: h.Status, HealthMessage: h.Message, RequiresPruning: true,
		}
		if manifest.ParseOptions(manifest.CompareOptionsOf(l.obj)).True(optIgnoreExtraneous) {
			rs.Message = msgIgnoredExtraneous
		}
		if withDiff {
			set, _ := a.ignoreFor(t, rs.ResourceKey)
			rs.Diff = secretSafeDiff(normalize(l.obj, l.obj.GetManagedFields(), set), nil)
		}
		out = append(out, rs)
	}
	slices.SortFunc(out, func(x, y appspec.ResourceStatus) int {
		switch {
		case x.String() < y.String():
			return -1
		case x.String() > y.String():
			return 1
		}
		return 0
	})
	return out
}

func (a *Activities) compareOne(ctx context.Context, d *desired, t Target, o *object, live *unstructured.Unstructured, dryRun, withDiff bool) (appspec.ResourceStatus, error) {
	rs := appspec.ResourceStatus{ResourceKey: o.key(), Version: o.obj.GroupVersionKind().Version}
	set, ignoreErr := a.ignoreFor(t, rs.ResourceKey)
	note := func(msg string) {
		if rs.Message != "" {
			msg = rs.Message + "; " + msg
		}
		rs.Message = msg
	}
	if ignoreErr != nil {
		note("ignoreDifferences: " + ignoreErr.Error())
	}
	if o.mapping == nil || live == nil {
		rs.Status, rs.Health = appspec.SyncOutOfSync, appspec.HealthMissing
		if o.mapping == nil {
			note(d.unmapped(o).Error())
		} else {
			note("resource does not exist in the cluster")
		}
		if withDiff {
			rs.Diff = secretSafeDiff(nil, normalize(o.obj, nil, set))
		}
		return rs, nil
	}
	h := a.health.Assess(live)
	rs.Health, rs.HealthMessage = h.Status, h.Message
	if owner := otherOwner(t, live); owner != "" {
		note("shared resource: also tracked by " + owner)
	}
	if !dryRun {
		rs.Status = appspec.SyncUnknown
		return rs, nil
	}
	synced, diff, err := a.diffOne(ctx, d, t, o, live, set, withDiff)
	if err != nil {
		if transient(err) {
			return rs, fmt.Errorf("dry run %s: %w", describe(rs.ResourceKey), err)
		}
		rs.Status = appspec.SyncOutOfSync
		note("server-side dry run failed: " + err.Error())
		if withDiff {
			managed := live.GetManagedFields()
			rs.Diff = secretSafeDiff(normalize(live, managed, set), normalize(o.obj, managed, set))
		}
		return rs, nil
	}
	rs.Status, rs.Diff = appspec.SyncOutOfSync, diff
	if synced {
		rs.Status = appspec.SyncSynced
	}
	if msg := takeOverNote(o, live); msg != "" {
		rs.Status = appspec.SyncOutOfSync
		note(msg)
	}
	return rs, nil
}

// diffOne server-side applies o as a dry run and compares the result with
// live after normalisation; with withDiff it renders the difference.
func (a *Activities) diffOne(ctx context.Context, d *desired, t Target, o *object, live *unstructured.Unstructured, set ignoreSet, withDiff bool) (bool, string, error) {
	dry := a.dryRuns.get(o.obj, live)
	if dry == nil {
		var err error
		a.applyRequest(true)
		dry, err = serverSideApply(ctx, o.client(d.c), o, o.obj, live, true)
		if err != nil {
			return false, "", err
		}
		// The dry run's result describes the live state it ran against.
		if dry.GetResourceVersion() == live.GetResourceVersion() {
			a.dryRuns.put(o.obj, live, dry)
		}
	}
	managed := live.GetManagedFields()
	ln, dn := normalize(live, managed, set), normalize(dry, managed, set)
	if equality.Semantic.DeepEqual(ln, dn) {
		return true, "", nil
	}
	if !withDiff {
		return false, "", nil
	}
	return false, secretSafeDiff(ln, dn), nil
}
