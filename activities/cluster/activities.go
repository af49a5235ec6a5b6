package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/health"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Activity names: wire contracts, never rename.
const (
	ApplyName       = "cluster.Apply"
	CompareName     = "cluster.Compare"
	WaitHealthyName = "cluster.WaitHealthy"
)

// FieldManager is the server-side-apply field manager of Windlass.
const FieldManager = "windlass"

// Errors that retrying cannot fix.
var (
	ErrUnknownKind = failure.Permanent("UnknownKind", "resource kind is not served by the cluster")
	ErrApply       = failure.Permanent("ApplyFailed", "apply rejected")
)

// ManifestLoader loads rendered manifests by reference.
type ManifestLoader interface {
	Load(ctx context.Context, ref render.ManifestRef) ([]*unstructured.Unstructured, error)
}

// ClientSource hands out clients per destination server.
type ClientSource interface {
	For(server string) (*kube.Clients, error)
}

// Activities is the cluster capability. Create it with New.
type Activities struct {
	manifests ManifestLoader
	clusters  ClientSource
	log       *slog.Logger
}

// New checks its dependencies.
func New(manifests ManifestLoader, clusters ClientSource, log *slog.Logger) (*Activities, error) {
	if manifests == nil || clusters == nil {
		return nil, errors.New("cluster: manifest loader and cluster clients are required")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Activities{manifests: manifests, clusters: clusters, log: log}, nil
}

// Register registers the activities under their constant names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Apply, activity.RegisterOptions{Name: ApplyName})
	r.RegisterActivityWithOptions(a.Compare, activity.RegisterOptions{Name: CompareName})
	r.RegisterActivityWithOptions(a.WaitHealthy, activity.RegisterOptions{Name: WaitHealthyName})
}

// object is one desired object with its REST mapping.
type object struct {
	obj     *unstructured.Unstructured
	mapping *meta.RESTMapping
}

func (o object) key() appspec.ResourceKey {
	gvk := o.obj.GroupVersionKind()
	return appspec.ResourceKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.obj.GetNamespace(), Name: o.obj.GetName()}
}

func (o object) client(c *kube.Clients) dynamic.ResourceInterface {
	if o.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(o.mapping.Resource).Namespace(o.obj.GetNamespace())
	}
	return c.Dynamic.Resource(o.mapping.Resource)
}

// prepare loads the manifests, maps them, defaults their namespace, stamps
// the tracking annotation and sorts them for apply.
func (a *Activities) prepare(ctx context.Context, t Target, ref render.ManifestRef) (*kube.Clients, []object, error) {
	c, err := a.clusters.For(t.Destination.Server)
	if err != nil {
		return nil, nil, err
	}
	objs, err := a.manifests.Load(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	manifest.Sort(objs)
	ns := t.Destination.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	out := make([]object, 0, len(objs))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			c.Mapper.Reset()
			m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			if meta.IsNoMatchError(err) {
				return nil, nil, fmt.Errorf("%w: %s %s", ErrUnknownKind, gvk, o.GetName())
			}
			return nil, nil, fmt.Errorf("map %s: %w", gvk, err)
		}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if o.GetNamespace() == "" {
				o.SetNamespace(ns)
			}
		} else {
			o.SetNamespace("")
		}
		manifest.SetTracking(t.Project, t.App, o)
		out = append(out, object{obj: o, mapping: m})
	}
	return c, out, nil
}

const (
	msgApplied = "resource applied"
	msgSynced  = "sync applied"
)

// Apply server-side-applies the app's manifests in sync order.
func (a *Activities) Apply(ctx context.Context, in ApplyInput) (ApplyOutput, error) {
	c, objs, err := a.prepare(ctx, in.Target, in.Manifests)
	if err != nil {
		return ApplyOutput{}, failure.Activity(fmt.Errorf("apply %s/%s: %w", in.Target.Project, in.Target.App, err))
	}
	if slices.Contains(in.Target.SyncOptions, "CreateNamespace=true") && in.Target.Destination.Namespace != "" && !in.DryRun {
		if err := ensureNamespace(ctx, c, in.Target.Destination.Namespace); err != nil {
			return ApplyOutput{}, err
		}
	}
	out := ApplyOutput{Resources: make([]ResourceResult, 0, len(objs))}
	for _, o := range objs {
		activity.RecordHeartbeat(ctx, len(out.Resources))
		res, err := a.applyOne(ctx, c, o, in.DryRun)
		out.Resources = append(out.Resources, res)
		if err != nil {
			return out, failure.Activity(fmt.Errorf("apply %s: %w", o.key(), err))
		}
		a.log.Debug(msgApplied, "resource", o.key().String(), "action", res.Action)
	}
	a.log.Info(msgSynced, "app", in.Target.Project+"/"+in.Target.App, "sha", in.Manifests.SHA, "resources", len(out.Resources))
	return out, nil
}

func (a *Activities) applyOne(ctx context.Context, c *kube.Clients, o object, dryRun bool) (ResourceResult, error) {
	res := ResourceResult{ResourceKey: o.key()}
	rc := o.client(c)
	before, err := rc.Get(ctx, o.obj.GetName(), metav1.GetOptions{})
	existed := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return res, err
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	after, err := rc.Apply(ctx, o.obj.GetName(), o.obj, opts)
	if err != nil {
		res.Action, res.Message = ActionFailed, err.Error()
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return res, fmt.Errorf("%w: %w", ErrApply, err)
		}
		return res, err
	}
	switch {
	case !existed:
		res.Action = ActionCreated
	case before.GetResourceVersion() != after.GetResourceVersion():
		res.Action = ActionConfigured
	default:
		res.Action = ActionUnchanged
	}
	return res, nil
}

func ensureNamespace(ctx context.Context, c *kube.Clients, name string) error {
	nsRes := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	if _, err := nsRes.Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if _, err := nsRes.Apply(ctx, name, ns, metav1.ApplyOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// Compare compares desired and live state and assesses health.
func (a *Activities) Compare(ctx context.Context, in CompareInput) (CompareOutput, error) {
	out, err := a.compare(ctx, in, true)
	return out, failure.Activity(err)
}

// compare reads the live objects and assesses their health; with diff it
// also compares each with a server-side-apply dry run of the desired one.
func (a *Activities) compare(ctx context.Context, in CompareInput, diff bool) (CompareOutput, error) {
	c, objs, err := a.prepare(ctx, in.Target, in.Manifests)
	if err != nil {
		return CompareOutput{}, fmt.Errorf("compare %s/%s: %w", in.Target.Project, in.Target.App, err)
	}
	out := CompareOutput{Sync: appspec.SyncSynced, Health: appspec.HealthHealthy, Resources: make([]appspec.ResourceStatus, 0, len(objs))}
	if !diff {
		out.Sync = appspec.SyncUnknown
	}
	for _, o := range objs {
		rs, err := compareOne(ctx, c, o, diff)
		if err != nil {
			return CompareOutput{}, fmt.Errorf("compare %s: %w", o.key(), err)
		}
		if diff && rs.Status != appspec.SyncSynced {
			out.Sync = appspec.SyncOutOfSync
		}
		out.Health = appspec.Worse(out.Health, rs.Health)
		out.Resources = append(out.Resources, rs)
	}
	return out, nil
}

func compareOne(ctx context.Context, c *kube.Clients, o object, diff bool) (appspec.ResourceStatus, error) {
	rs := appspec.ResourceStatus{ResourceKey: o.key(), Version: o.obj.GroupVersionKind().Version}
	rc := o.client(c)
	live, err := rc.Get(ctx, o.obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		rs.Status, rs.Health, rs.Message = appspec.SyncOutOfSync, appspec.HealthMissing, "resource does not exist in the cluster"
		return rs, nil
	}
	if err != nil {
		return rs, err
	}
	h := health.Assess(live)
	rs.Health, rs.HealthMessage = h.Status, h.Message
	if !diff {
		rs.Status = appspec.SyncUnknown
		return rs, nil
	}
	dry, err := rc.Apply(ctx, o.obj.GetName(), o.obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		rs.Status, rs.Message = appspec.SyncOutOfSync, "server-side dry run failed: "+err.Error()
		return rs, nil
	}
	if equality.Semantic.DeepEqual(normalize(dry), normalize(live)) {
		rs.Status = appspec.SyncSynced
	} else {
		rs.Status = appspec.SyncOutOfSync
	}
	return rs, nil
}

// normalize drops the fields that differ without a change of intent.
func normalize(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", corev1.LastAppliedConfigAnnotation)
	if ann := c.GetAnnotations(); ann != nil && len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c.Object
}

// WaitHealthy polls the live objects' health (no diff: that is Compare's
// job) until every resource is Healthy or one is Degraded, heartbeating as
// it goes. It returns the last comparison when ctx ends (the activity's
// timeout) with the context's error, so the caller can report progress.
func (a *Activities) WaitHealthy(ctx context.Context, in WaitInput) (CompareOutput, error) {
	poll := time.Duration(in.PollMillis) * time.Millisecond
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for {
		out, err := a.compare(ctx, in.CompareInput, false)
		if err != nil {
			return out, failure.Activity(err)
		}
		activity.RecordHeartbeat(ctx, out.Health)
		if out.Health == appspec.HealthHealthy || out.Health == appspec.HealthDegraded {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(poll):
		}
	}
}
