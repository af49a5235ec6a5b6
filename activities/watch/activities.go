package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"
	workflowservice "go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
)

// Activity names: wire contracts, never rename.
const (
	WatchName         = "watch.Watch"
	SweepSelfHealName = "watch.SweepSelfHeal"
)

// Names of the application workflow's refresh signal and ID scheme; they
// mirror the workflows package, which this package must not import.
const (
	refreshSignal = "refresh"
	appIDPrefix   = "app/"
)

// RefreshRequest is the payload of an application's refresh signal.
type RefreshRequest struct {
	Hard   bool   `json:"hard,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Live: the refresh is about the live state, so the app need not ask
	// Git for its revision past the ls-remote cache.
	Live bool `json:"live,omitempty"`
	// Drift: another writer changed a tracked object (the watch's
	// refreshes; not the sweep's).
	Drift bool `json:"drift,omitempty"`
}

// ClientSource hands out clients per destination server.
type ClientSource interface {
	For(server string) (*kube.Clients, error)
}

// Temporal is the part of the Temporal client the activities use.
type Temporal interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
	ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}

// Activities is the watch capability.
type Activities struct {
	clusters     ClientSource
	temporal     Temporal
	namespace    string
	fieldManager string
	log          *slog.Logger
	filter       *resourcefilter.Filter // nil: every kind may be watched
	sweepEvery   time.Duration          // 0: the sweep refreshes every app it lists
}

// Option configures Activities.
type Option func(*Activities)

// WithResourceFilter leaves the kinds f excludes on a cluster unwatched.
func WithResourceFilter(f *resourcefilter.Filter) Option {
	return func(a *Activities) { a.filter = f }
}

// WithSweepEvery tells the self-heal sweep how often it runs: it leaves
// out an app whose own refresh interval (its memo's refreshSeconds) is no
// longer, since that app's timer pass compares the live state as often.
func WithSweepEvery(d time.Duration) Option {
	return func(a *Activities) { a.sweepEvery = d }
}

// New checks its dependencies. fieldManager names Windlass's own writes,
// which are not drift.
func New(clusters ClientSource, temporal Temporal, namespace, fieldManager string, log *slog.Logger, opts ...Option) (*Activities, error) {
	if clusters == nil || temporal == nil || fieldManager == "" {
		return nil, errors.New("watch: clusters, temporal client and field manager are required")
	}
	if log == nil {
		log = slog.Default()
	}
	a := &Activities{clusters: clusters, temporal: temporal, namespace: namespace, fieldManager: fieldManager, log: log}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Watch, activity.RegisterOptions{Name: WatchName})
	r.RegisterActivityWithOptions(a.SweepSelfHeal, activity.RegisterOptions{Name: SweepSelfHealName})
}

// GroupKind names a kind to watch.
type GroupKind struct {
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
}

// Input is the input of Watch.
type Input struct {
	Server string      `json:"server"`
	Kinds  []GroupKind `json:"kinds"`
	// DebounceMillis is the window after an app's refresh signal in which
	// its further events are gathered into one more signal (default 1000).
	// The first event of a quiet app is signalled at once.
	DebounceMillis int `json:"debounceMillis,omitempty"`
	// HeartbeatMillis is the heartbeat period (default 5000).
	HeartbeatMillis int `json:"heartbeatMillis,omitempty"`
}

// Progress is the heartbeat detail of Watch.
type Progress struct {
	Kinds int `json:"kinds"`
	// Synced is how many of the kinds have been listed: one that cannot
	// be (forbidden, say) is retried with a backoff and logged, while the
	// others are watched.
	Synced  int   `json:"synced"`
	Events  int64 `json:"events"`
	Signals int64 `json:"signals"`
}

const (
	msgWatching     = "watching cluster for drift"
	msgDrift        = "drift detected"
	msgSignalError  = "refresh signal failed"
	msgKindSkipped  = "kind not served, not watched"
	msgKindExcluded = "kind excluded, not watched"
	msgKindFailing  = "cannot list or watch a kind; retrying"
	msgNotDrift     = "tracked object changed by windlass or in status only"
)

// Watch runs informers until ctx ends (the activity is cancelled or times
// out), signalling refreshes on drift.
func (a *Activities) Watch(ctx context.Context, in Input) error {
	c, err := a.clusters.For(in.Server)
	if err != nil {
		return failure.Activity(fmt.Errorf("watch %s: %w", in.Server, err))
	}
	debounce := time.Duration(in.DebounceMillis) * time.Millisecond
	if debounce <= 0 {
		debounce = time.Second
	}
	beat := time.Duration(in.HeartbeatMillis) * time.Millisecond
	if beat <= 0 {
		beat = 5 * time.Second
	}
	d := newDebouncer(debounce, func(app, reason string, list bool) { a.signal(ctx, app, reason, list) })
	defer d.stop()
	// Only the objects Windlass manages (those carrying the app label,
	// by which compares list them too), and of each only what drift
	// detection reads: an idle fleet's informers cost little memory.
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = manifest.AppLabel })
	var informers []cache.SharedIndexInformer
	for _, gk := range in.Kinds {
		if a.filter.Excluded(gk.Group, gk.Kind, in.Server) {
			a.log.Debug(msgKindExcluded, "group", gk.Group, "kind", gk.Kind)
			continue
		}
		m, err := c.Mapper.RESTMapping(schema.GroupKind{Group: gk.Group, Kind: gk.Kind})
		if err != nil {
			a.log.Debug(msgKindSkipped, "group", gk.Group, "kind", gk.Kind, "err", err)
			continue
		}
		inf := factory.ForResource(m.Resource).Informer()
		if err := inf.SetTransform(slim); err != nil {
			return fmt.Errorf("watch %s: %w", m.Resource, err)
		}
		if _, err := inf.AddEventHandler(a.handler(d)); err != nil {
			return fmt.Errorf("watch %s: %w", m.Resource, err)
		}
		res := m.Resource.GroupResource().String()
		if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			a.log.Warn(msgKindFailing, "server", in.Server, "resource", res, "err", err)
		}); err != nil {
			return fmt.Errorf("watch %s: %w", m.Resource, err)
		}
		informers = append(informers, inf)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	// Heartbeat from the start: a kind that cannot be listed never syncs,
	// and waiting for it would let the heartbeat time out while the
	// other kinds' informers went on.
	logged := false
	t := time.NewTicker(beat)
	defer t.Stop()
	for {
		synced := 0
		for _, inf := range informers {
			if inf.HasSynced() {
				synced++
			}
		}
		if synced == len(informers) && !logged {
			logged = true
			a.log.Info(msgWatching, "server", in.Server, "kinds", len(informers))
		}
		activity.RecordHeartbeat(ctx, Progress{Kinds: len(informers), Synced: synced, Events: d.events(), Signals: d.signals()})
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// handler turns informer events on tracked objects into debounced
// refreshes. The initial list is not drift. A change or deletion of an
// object the app has asks for a drift refresh (CompareInput.Drift, which
// reads the app's known objects); an object that another writer created
// with the app's tracking asks for a refresh that lists, which finds it
// (Argo CD shows such an object as one to prune). Windlass's own creations
// (its applies and hooks) are neither.
func (a *Activities) handler(d *debouncer) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			n, ok := obj.(*unstructured.Unstructured)
			if !ok || isInInitialList {
				return
			}
			app := manifest.OwnerApp(n)
			if app == "" || !ownTracking(app, n) {
				return
			}
			if changedWriter(&unstructured.Unstructured{Object: map[string]any{}}, n, a.fieldManager) == "" {
				a.log.Debug(msgNotDrift, "app", app, "kind", n.GetKind(), "name", n.GetName())
				return
			}
			d.touch(app, "drift: "+n.GetKind()+" "+n.GetNamespace()+"/"+n.GetName()+" created", true)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if !ok1 || !ok2 {
				return
			}
			app := manifest.OwnerApp(n)
			if app == "" {
				return
			}
			if !a.isDrift(o, n) {
				a.log.Debug(msgNotDrift, "app", app, "kind", n.GetKind(), "name", n.GetName())
				return
			}
			d.touch(app, "drift: "+n.GetKind()+" "+n.GetNamespace()+"/"+n.GetName()+" changed", false)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			o, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			if app := manifest.OwnerApp(o); app != "" {
				d.touch(app, "drift: "+o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()+" deleted", false)
			}
		},
	}
}

// ownTracking says n's tracking annotation names app ("<project>/<name>")
// and n itself, not another object it was copied from (as a Deployment's
// annotations are onto its ReplicaSets).
func ownTracking(app string, n *unstructured.Unstructured) bool {
	project, name, ok := strings.Cut(app, "/")
	return ok && manifest.OwnedBy(project, name, n)
}

// isDrift reports whether the change from o to n (slim objects) touched
// more than status and bookkeeping, and whether a writer other than
// Windlass made it: one of the managed-fields entries that changed belongs
// to another manager and is not a status update. On an object Windlass
// applied, that writer must also have taken a field Windlass owns (an
// update takes the fields it changes, a forced apply those it sets), so
// that Windlass's field set changed, or changed a field it took before
// (its field set stayed, its time moved). A writer that only adds fields
// of its own, such as the deployment controller's revision annotation on
// a new Deployment, is no drift, as in a server-side diff: it used to cost
// every synced Deployment a refresh.
func (a *Activities) isDrift(o, n *unstructured.Unstructured) bool {
	if o.Object[digestField] == n.Object[digestField] {
		return false
	}
	if changedWriter(o, n, a.fieldManager) == "" {
		return false
	}
	before, after := entries(o), entries(n)
	applied := false
	for k, e := range after {
		if e.Manager == a.fieldManager {
			applied = true
			if old, ok := before[k]; !ok || !sameFields(old, e) {
				return true // Windlass's set changed: a field was taken
			}
			continue
		}
		if old, ok := before[k]; ok && sameFields(old, e) && !reflect.DeepEqual(old.Time, e.Time) {
			return true // a field this writer owns changed again
		}
	}
	return !applied
}

// entries are u's managed-fields entries but the status subresource's, by
// manager, operation and subresource.
func entries(u *unstructured.Unstructured) map[[3]string]metav1.ManagedFieldsEntry {
	m := map[[3]string]metav1.ManagedFieldsEntry{}
	for _, e := range u.GetManagedFields() {
		if e.Subresource != "status" {
			m[entryKey(e)] = e
		}
	}
	return m
}

// entryKey names a managed-fields entry: manager, operation, subresource.
func entryKey(e metav1.ManagedFieldsEntry) [3]string {
	return [3]string{e.Manager, string(e.Operation), e.Subresource}
}

func sameFields(a, b metav1.ManagedFieldsEntry) bool {
	return reflect.DeepEqual(a.FieldsV1, b.FieldsV1)
}

// digestField holds, in a slim object, the digest of its desiredPart.
const digestField = "windlass.dev/desired-digest"

// slim is the informers' transform: of an object it keeps its kind, name,
// namespace, UID, resourceVersion, tracking annotation and managed fields
// (slimManagedFields),
// and replaces the rest by the digest of its desiredPart, which is all
// that drift detection compares. Other values pass unchanged.
func slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	js, err := json.Marshal(desiredPart(u))
	if err != nil {
		return nil, fmt.Errorf("digest %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	sum := sha256.Sum256(js)
	md := map[string]any{}
	if full, ok := u.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"name", "namespace", "uid", "resourceVersion"} {
			if v, ok := full[k]; ok {
				md[k] = v
			}
		}
		if mf, ok := full["managedFields"].([]any); ok {
			if md["managedFields"], err = slimManagedFields(mf); err != nil {
				return nil, fmt.Errorf("digest %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
		}
	}
	if v, ok := u.GetAnnotations()[manifest.TrackingAnnotation]; ok {
		md["annotations"] = map[string]any{manifest.TrackingAnnotation: v}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": md,
		digestField: hex.EncodeToString(sum[:]),
	}}, nil
}

// slimManagedFields keeps of the managed-fields entries what
// changedWriter reads: each entry but the status subresource's (which it
// skips), with its field set replaced by a digest (a field set holds a
// map for every field, the larger part of a decoded object).
func slimManagedFields(entries []any) ([]any, error) {
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok || m["subresource"] == "status" {
			continue
		}
		c := make(map[string]any, len(m))
		for k, v := range m {
			if k != "fieldsV1" {
				c[k] = v
				continue
			}
			js, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("managed fields of %v: %w", m["manager"], err)
			}
			sum := sha256.Sum256(js)
			c[k] = map[string]any{"sha256": hex.EncodeToString(sum[:])}
		}
		out = append(out, c)
	}
	return out, nil
}

// desiredPart is the object without status and server bookkeeping.
// It shares everything below those two levels with u (it is only
// marshalled, on every event, so it copies no more than it removes from).
func desiredPart(u *unstructured.Unstructured) map[string]any {
	c := maps.Clone(u.Object)
	delete(c, "status")
	if md, ok := c["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		for _, k := range []string{"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp"} {
			delete(md, k)
		}
		c["metadata"] = md
	}
	return c
}

// changedWriter returns a manager other than self whose managed-fields
// entry (outside status) is new or changed from o to n, or "".
func changedWriter(o, n *unstructured.Unstructured, self string) string {
	before := entries(o)
	for _, e := range n.GetManagedFields() {
		if e.Manager == self || e.Subresource == "status" {
			continue
		}
		old, ok := before[entryKey(e)]
		if !ok || !reflect.DeepEqual(old.Time, e.Time) || !sameFields(old, e) {
			return e.Manager
		}
	}
	return ""
}

// signal sends one refresh to app ("<project>/<name>"): a drift refresh,
// or with list one whose compare lists the app's kinds.
func (a *Activities) signal(ctx context.Context, app, reason string, list bool) {
	a.log.Info(msgDrift, "app", app, "reason", reason, "list", list)
	err := a.temporal.SignalWorkflow(ctx, appIDPrefix+app, "", refreshSignal, RefreshRequest{Reason: reason, Live: true, Drift: !list})
	if err != nil && ctx.Err() == nil {
		a.log.Warn(msgSignalError, "app", app, "err", err)
	}
}

// debouncer turns a burst of events for one app into at most two
// refreshes: the first event signals at once (drift is healed without
// waiting), and the events that arrive in the next delay are gathered into
// one more signal at its end, so the refresh after a burst sees its last
// change. A quiet delay closes the app's window. A signal lists (see
// Activities.signal) when any event it gathers asked to.
type debouncer struct {
	mu       sync.Mutex
	delay    time.Duration
	send     func(app, reason string, list bool)
	windows  map[string]*window
	nEvents  int64
	nSignals int64
	stopped  bool
}

// window is an app's open debounce window: reason is set when an event
// arrived after the window's last signal, list when one of those asked to
// list.
type window struct {
	timer  *time.Timer
	reason string
	list   bool
}

func newDebouncer(delay time.Duration, send func(app, reason string, list bool)) *debouncer {
	return &debouncer{delay: delay, send: send, windows: map[string]*window{}}
}

func (d *debouncer) touch(app, reason string, list bool) {
	d.mu.Lock()
	d.nEvents++
	if d.stopped {
		d.mu.Unlock()
		return
	}
	if w := d.windows[app]; w != nil {
		w.reason = reason
		w.list = w.list || list
		d.mu.Unlock()
		return
	}
	w := &window{}
	d.windows[app] = w
	d.nSignals++
	w.timer = time.AfterFunc(d.delay, func() { d.close(app, w) })
	d.mu.Unlock()
	// Not on the informer's goroutine: a burst of events for many apps
	// must not wait for each other's signals.
	go d.send(app, reason, list)
}

// close ends w's delay: it signals the events gathered meanwhile and keeps
// the window open for one more delay, or removes it when none arrived.
func (d *debouncer) close(app string, w *window) {
	d.mu.Lock()
	if d.stopped || d.windows[app] != w {
		d.mu.Unlock()
		return
	}
	reason, list := w.reason, w.list
	if reason == "" {
		delete(d.windows, app)
		d.mu.Unlock()
		return
	}
	w.reason, w.list = "", false
	d.nSignals++
	w.timer = time.AfterFunc(d.delay, func() { d.close(app, w) })
	d.mu.Unlock()
	d.send(app, reason, list)
}

func (d *debouncer) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	for _, w := range d.windows {
		w.timer.Stop()
	}
}

func (d *debouncer) events() int64  { d.mu.Lock(); defer d.mu.Unlock(); return d.nEvents }
func (d *debouncer) signals() int64 { d.mu.Lock(); defer d.mu.Unlock(); return d.nSignals }

// MemoRefreshSeconds is the app memo's field of its refresh interval
// (workflows.MemoRefreshSeconds; this package does not import workflows).
const MemoRefreshSeconds = "refreshSeconds"

// refreshedOften says whether the app's memo gives a refresh interval no
// longer than the sweep's.
func (a *Activities) refreshedOften(e *workflowpb.WorkflowExecutionInfo) bool {
	p := e.GetMemo().GetFields()[MemoRefreshSeconds]
	if a.sweepEvery <= 0 || p == nil {
		return false
	}
	var secs int64
	if err := converter.GetDefaultDataConverter().FromPayload(p, &secs); err != nil {
		return false
	}
	return secs > 0 && time.Duration(secs)*time.Second <= a.sweepEvery
}

// SweepInput is the input of SweepSelfHeal.
type SweepInput struct {
	// Query selects the apps to refresh (a visibility query).
	Query string `json:"query"`
}

// SweepOutput counts the apps refreshed.
type SweepOutput struct {
	Apps    int `json:"apps"`
	Failed  int `json:"failed,omitempty"`
	Scanned int `json:"scanned"`
	// Skipped counts the apps whose refresh interval is no longer than
	// the sweep's: their timer pass is the safety net.
	Skipped int `json:"skipped,omitempty"`
}

// SweepSelfHeal signals a refresh to every running app the query selects
// whose refresh interval is longer than the sweep's.
func (a *Activities) SweepSelfHeal(ctx context.Context, in SweepInput) (SweepOutput, error) {
	var out SweepOutput
	var token []byte
	for {
		resp, err := a.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: a.namespace, Query: in.Query, PageSize: 500, NextPageToken: token,
		})
		if err != nil {
			return out, fmt.Errorf("list self-healing apps: %w", err)
		}
		ids := make([]string, 0, len(resp.Executions))
		for _, e := range resp.Executions {
			out.Scanned++
			if a.refreshedOften(e) {
				out.Skipped++
				continue
			}
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		slices.Sort(ids)
		for _, id := range ids {
			err := a.temporal.SignalWorkflow(ctx, id, "", refreshSignal, RefreshRequest{Reason: "self-heal sweep", Live: true})
			if err != nil {
				out.Failed++
				a.log.Warn(msgSignalError, "app", id, "err", err)
				continue
			}
			out.Apps++
		}
		activity.RecordHeartbeat(ctx, out)
		if token = resp.NextPageToken; len(token) == 0 {
			return out, nil
		}
	}
}
