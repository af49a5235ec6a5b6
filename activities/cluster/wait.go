package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// heartbeatEvery is how often a wait heartbeats when nothing changes.
const heartbeatEvery = 5 * time.Second

// waveProgress is the heartbeat detail of WaitWave and DeleteApp: the hooks
// seen finished (a finished hook may be deleted, say by a Job's TTL, and
// must still count after a worker restart).
type waveProgress struct {
	Done []string `json:"done,omitempty"`
}

func (p *waveProgress) done(k appspec.ResourceKey) bool { return slices.Contains(p.Done, k.String()) }

func (p *waveProgress) add(k appspec.ResourceKey) {
	if !p.done(k) {
		p.Done = append(p.Done, k.String())
	}
}

func resumeProgress(ctx context.Context) waveProgress {
	var p waveProgress
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &p)
	}
	return p
}

// WaitWave waits until every resource of the step is healthy (or
// suspended) and every hook has completed, watching the objects through
// informers (one per kind and namespace, selected by the app label) rather
// than polling. It heartbeats the hooks seen finished and resumes from them
// after a worker restart. A Degraded resource, a failed hook or a Lua
// health script that fails (Unknown health, which would otherwise wait out
// the timeout) ends the wait with a normal output: Health Degraded, Failed
// naming the resource and Message its health message (no error, so the
// per-resource results reach the workflow). The activity's StartToClose is
// the wave's timeout: when ctx ends the last output is returned with ctx's
// error.
func (a *Activities) WaitWave(ctx context.Context, in WaveInput) (WaveOutput, error) {
	d, err := a.load(ctx, in.Target, in.Manifests, in.Operation.SyncOptions)
	if err != nil {
		return WaveOutput{}, failure.Activity(fmt.Errorf("wait wave %s %d of %s: %w", in.Step.Phase, in.Step.Wave, appName(in.Target), err))
	}
	steps, _ := d.expand(in.Target, in.Operation)
	objs := inStep(steps, in.Step)
	if in.HooksOnly {
		objs = slices.DeleteFunc(objs, func(o *object) bool { return !o.hook.IsHook() })
	}
	if in.Operation.DryRun || len(objs) == 0 {
		return WaveOutput{Health: appspec.HealthHealthy}, nil
	}
	prog := resumeProgress(ctx)
	wctx, cancel := beforeDeadline(ctx)
	defer cancel()
	out, err := a.waitStep(wctx, d, in.Target, objs, &prog)
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		// The wave's own timeout: say what was not ready, and why.
		out = timedOut(out)
		out.Resources, out.Omitted = boundResults(out.Resources)
		return out, nil
	}
	if err != nil && ctx.Err() == nil {
		err = failure.Activity(fmt.Errorf("wait wave %s %d of %s: %w", in.Step.Phase, in.Step.Wave, appName(in.Target), err))
	}
	out.Resources, out.Omitted = boundResults(out.Resources)
	return out, err
}

// beforeDeadline ends ctx a little before its deadline, so that a wait
// that runs out can still return what it found (an activity that reaches
// its own deadline returns nothing).
func beforeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(waitMargin, time.Until(dl)/10)
	return context.WithDeadline(ctx, dl.Add(-margin))
}

// waitMargin is the most a wave's wait ends before its activity's
// deadline.
const waitMargin = 5 * time.Second

// timedOut marks a wait's last output as failed by its timeout, naming the
// resources that were not ready with their health messages.
func timedOut(out WaveOutput) WaveOutput {
	var pending []string
	for _, r := range out.Resources {
		if done(r.Health) {
			continue
		}
		k := r.ResourceKey
		if out.Failed == nil {
			out.Failed = &k
		}
		what := describe(k)
		if r.Message != "" {
			what += ": " + r.Message
		}
		pending = append(pending, what)
	}
	const shown = 3
	msg := "timed out"
	if len(pending) > 0 {
		msg += " waiting for " + strings.Join(pending[:min(len(pending), shown)], "; ")
	}
	if len(pending) > shown {
		msg += fmt.Sprintf("; and %d more", len(pending)-shown)
	}
	out.Message = msg
	return out
}

// waitStep waits for the objects of a step, then for its declared apps.
func (a *Activities) waitStep(ctx context.Context, d *desired, t Target, objs []*object, prog *waveProgress) (WaveOutput, error) {
	var decls, plain []*object
	for _, o := range objs {
		if o.decl {
			decls = append(decls, o)
		} else {
			plain = append(plain, o)
		}
	}
	out := WaveOutput{Health: appspec.HealthHealthy}
	if len(plain) > 0 {
		var err error
		if out, err = a.waitObjects(ctx, d, t, plain, prog); err != nil || out.Failed != nil {
			return out, err
		}
	}
	if len(decls) == 0 {
		return out, nil
	}
	if a.decls == nil {
		return out, fmt.Errorf("%w: %s %s", ErrNoDeclarations, decls[0].obj.GetKind(), decls[0].obj.GetName())
	}
	apps, err := a.waitDecls(ctx, t, decls, prog)
	apps.Resources = append(out.Resources, apps.Resources...)
	apps.Health = appspec.Worse(out.Health, apps.Health)
	return apps, err
}

// waitObjects watches objs until all are done or one fails.
func (a *Activities) waitObjects(ctx context.Context, d *desired, t Target, objs []*object, prog *waveProgress) (WaveOutput, error) {
	w := newLiveWatch(d.c, manifest.AppLabel+"="+manifest.AppLabelValue(t.Project, t.App))
	for _, o := range objs {
		if err := d.awaitKind(ctx, o); err != nil {
			return WaveOutput{}, err
		}
		w.add(o.mapping.Resource, o.namespaced(), o.obj.GetNamespace())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := w.start(ctx); err != nil {
		return WaveOutput{}, err
	}
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		out, finished := a.assess(objs, w, prog)
		heartbeat(ctx, *prog)
		if finished {
			return out, nil
		}
		select {
		case <-w.changed:
		case <-tick.C:
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}

// assess evaluates every object once; finished is true when all are done
// or one failed.
func (a *Activities) assess(objs []*object, w *liveWatch, prog *waveProgress) (WaveOutput, bool) {
	out := WaveOutput{Health: appspec.HealthHealthy, Resources: make([]ResourceResult, 0, len(objs))}
	pending := false
	for _, o := range objs {
		k := o.key()
		r := o.result(ActionWaited, "")
		var live *unstructured.Unstructured
		if o.mapping != nil {
			live = w.get(o.mapping.Resource, o.namespaced(), o.obj.GetNamespace(), o.obj.GetName())
		}
		var h health.Result
		failed := false
		if o.hook.IsHook() {
			h = a.hookHealth(live)
			switch {
			case prog.done(k):
				r.Action, h = ActionHookSucceeded, health.Result{Status: appspec.HealthHealthy, Message: "hook completed"}
			case h.Status == appspec.HealthHealthy:
				r.Action = ActionHookSucceeded
				prog.add(k)
			case h.Status == appspec.HealthDegraded, h.ScriptError:
				r.Action, failed = ActionHookFailed, true
			default:
				pending = true
			}
		} else {
			h = a.health.Assess(live)
			switch {
			case h.Status == appspec.HealthHealthy, h.Status == appspec.HealthSuspended:
			case h.Status == appspec.HealthDegraded, h.ScriptError:
				failed = true
			default:
				pending = true
			}
		}
		r.Health, r.Message = h.Status, h.Message
		if live == nil && r.Message == "" {
			r.Message = "waiting for the resource to exist"
		}
		if failed && out.Failed == nil {
			out.Failed = &k
			out.Message = describe(k) + ": " + h.Message
		}
		if h.Status != appspec.HealthSuspended {
			out.Health = appspec.Worse(out.Health, h.Status)
		}
		out.Resources = append(out.Resources, r)
	}
	if out.Failed != nil {
		out.Health = appspec.HealthDegraded
		return out, true
	}
	return out, !pending
}

// hookHealth is a hook's health: a Pod is done only when it has
// terminated (a running, ready pod is not), other kinds as usual.
func (a *Activities) hookHealth(live *unstructured.Unstructured) health.Result {
	if live != nil && live.GetKind() == "Pod" && live.GroupVersionKind().Group == "" {
		phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
		switch phase {
		case "Succeeded":
			return health.Result{Status: appspec.HealthHealthy, Message: "pod completed"}
		case "Failed":
			msg, _, _ := unstructured.NestedString(live.Object, "status", "message")
			if msg == "" {
				msg = "pod failed"
			}
			return health.Result{Status: appspec.HealthDegraded, Message: msg}
		}
		return health.Result{Status: appspec.HealthProgressing, Message: "pod is " + phase}
	}
	return a.health.Assess(live)
}

// watchSet keeps informers on the kinds and namespaces of the objects
// waited for, selected by a label, and signals every change. Its
// informers list, then watch: a wait for deletions needs to know when it
// has seen every object (a wave's wait does not: liveWatch).
type watchSet struct {
	c         *kube.Clients
	selector  string
	informers map[watchKey]cache.SharedIndexInformer
	changed   chan struct{}
}

type watchKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

func newWatchSet(c *kube.Clients, selector string) *watchSet {
	return &watchSet{c: c, selector: selector, informers: map[watchKey]cache.SharedIndexInformer{}, changed: make(chan struct{}, 1)}
}

func (w *watchSet) add(gvr schema.GroupVersionResource, namespaced bool, ns string) {
	if !namespaced {
		ns = metav1.NamespaceAll
	}
	k := watchKey{gvr: gvr, ns: ns}
	if _, ok := w.informers[k]; ok {
		return
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(listFirst{w.c.Dynamic}, gvr, ns, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.LabelSelector = w.selector
	}).Informer()
	notify := func() {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})
	w.informers[k] = inf
}

// start runs the informers until ctx ends and waits for their first list.
func (w *watchSet) start(ctx context.Context) error {
	synced := make([]cache.InformerSynced, 0, len(w.informers))
	for _, inf := range w.informers {
		go inf.RunWithContext(ctx)
		synced = append(synced, inf.HasSynced)
	}
	// Not cache.WaitForCacheSync: it looks every 100 ms, a delay every
	// sync's wait would pay, where the first list takes a few ms.
	err := wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) {
		for _, ok := range synced {
			if !ok() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("watch: caches did not sync: %w", err)
	}
	return nil
}

// syncPoll is how often start looks whether the informers have listed.
const syncPoll = 5 * time.Millisecond

// get returns the watched object, or nil.
func (w *watchSet) get(gvr schema.GroupVersionResource, namespaced bool, ns, name string) *unstructured.Unstructured {
	key, watchNS := name, metav1.NamespaceAll
	if namespaced {
		key, watchNS = ns+"/"+name, ns
	}
	inf, ok := w.informers[watchKey{gvr: gvr, ns: watchNS}]
	if !ok {
		return nil
	}
	item, exists, err := inf.GetStore().GetByKey(key)
	if err != nil || !exists {
		return nil
	}
	u, _ := item.(*unstructured.Unstructured)
	return u
}

// listFirst is a dynamic client whose informers list, then watch, without
// first trying a streaming list (a watch with sendInitialEvents), which
// client-go does by default and an API server without the WatchList
// feature refuses (1.33's default: "sendInitialEvents is forbidden for
// watch unless the WatchList feature gate is enabled"): an informer of a
// few objects paid a refused request and its round trip before its list.
type listFirst struct{ dynamic.Interface }

// IsWatchListSemanticsUnSupported tells client-go's reflector to list.
func (listFirst) IsWatchListSemanticsUnSupported() bool { return true }
