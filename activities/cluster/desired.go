package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Sync options Windlass reads (app, operation or per-resource annotation).
const (
	optCreateNamespace          = "CreateNamespace"
	optPrune                    = "Prune"
	optDelete                   = "Delete"
	optPruneLast                = "PruneLast"
	optReplace                  = "Replace"
	optForce                    = "Force"
	optValidate                 = "Validate"
	optApplyOutOfSyncOnly       = "ApplyOutOfSyncOnly"
	optPrunePropagationPolicy   = "PrunePropagationPolicy"
	optFailOnSharedResource     = "FailOnSharedResource"
	optRespectIgnoreDifferences = "RespectIgnoreDifferences"
	optSkipDryRunOnMissing      = "SkipDryRunOnMissingResource"
	optIgnoreExtraneous         = "IgnoreExtraneous"
)

// object is one desired object with its REST mapping and sync metadata.
type object struct {
	obj *unstructured.Unstructured
	// mapping is nil when the cluster does not serve the kind (yet).
	mapping *meta.RESTMapping
	hook    manifest.Hook
	wave    int
	// opts are the app's, the operation's and the object's sync options.
	opts manifest.Options
	// phase is the step's phase once the object is expanded into steps.
	phase string
	// decl marks an app or project declaration (IsDeclaration): it is
	// carried out by Declarations, never sent to the cluster.
	decl bool
}

func (o *object) key() appspec.ResourceKey {
	if o.decl {
		return declKey(o.obj)
	}
	return keyOf(o.obj)
}

func keyOf(u *unstructured.Unstructured) appspec.ResourceKey {
	gvk := u.GroupVersionKind()
	name := u.GetName()
	if name == "" {
		name = u.GetGenerateName()
	}
	return appspec.ResourceKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: name}
}

func (o *object) namespaced() bool {
	return o.mapping == nil || o.mapping.Scope.Name() == meta.RESTScopeNameNamespace
}

func (o *object) client(c *kube.Clients) dynamic.ResourceInterface {
	return resourceClient(c, o.mapping.Resource, o.namespaced(), o.obj.GetNamespace())
}

func (o *object) result(action Action, msg string) ResourceResult {
	return ResourceResult{ResourceKey: o.key(), Action: action, Message: msg, Phase: o.phase, Wave: o.wave, Hook: o.hook.IsHook()}
}

func resourceClient(c *kube.Clients, gvr schema.GroupVersionResource, namespaced bool, ns string) dynamic.ResourceInterface {
	if namespaced {
		return c.Dynamic.Resource(gvr).Namespace(ns)
	}
	return c.Dynamic.Resource(gvr)
}

// desired is an app's rendered objects, mapped and classified.
type desired struct {
	c    *kube.Clients
	objs []*object
	// crds are the kinds the manifests' CustomResourceDefinitions define,
	// with their scope.
	crds map[schema.GroupKind]string
	// opts are the app's and the operation's sync options.
	opts manifest.Options
	// excluded are the rendered objects whose kind the resource filter
	// excludes on the destination: left out of objs.
	excluded []appspec.ResourceKey

	mu       sync.Mutex // guards remapped and reset
	remapped map[schema.GroupVersionKind]*meta.RESTMapping
	reset    time.Time
}

// load loads the manifests, maps them, defaults their namespace and stamps
// the tracking on every object but hooks (which are named per sync in
// expand). Kinds the cluster does not serve keep a nil mapping; callers
// decide whether that is an error.
func (a *Activities) load(ctx context.Context, t Target, ref render.ManifestRef, opOptions []string) (*desired, error) {
	c, err := a.clusters.For(t.Destination.Server)
	if err != nil {
		return nil, err
	}
	objs, err := a.manifests.Load(ctx, ref)
	if err != nil {
		return nil, err
	}
	d := &desired{c: c, crds: crdScopes(objs), opts: manifest.ParseOptions(t.SyncOptions, opOptions)}
	ns := t.Destination.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	reset := false
	for _, u := range objs {
		u = u.DeepCopy()
		if IsDeclaration(u) {
			if gvk := u.GroupVersionKind(); a.filter.Excluded(gvk.Group, gvk.Kind, t.Destination.Server) {
				d.excluded = append(d.excluded, declKey(u))
				continue
			}
			d.objs = append(d.objs, &object{obj: u, wave: manifest.Wave(u), decl: true,
				opts: manifest.ParseOptions(t.SyncOptions, opOptions, manifest.SyncOptionsOf(u))})
			continue
		}
		gvk := u.GroupVersionKind()
		m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) && !reset {
			c.Mapper.Reset()
			reset = true
			m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil && !meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("map %s: %w", gvk, err)
		}
		o := &object{obj: u, hook: manifest.HookOf(u), wave: manifest.Wave(u)}
		if err == nil {
			o.mapping = m
		}
		namespaced := o.namespaced()
		if o.mapping == nil {
			namespaced = d.crds[gvk.GroupKind()] != string(apiextensionsClusterScope)
		}
		switch {
		case !namespaced:
			u.SetNamespace("")
		case u.GetNamespace() == "":
			u.SetNamespace(ns)
		}
		if a.filter.Excluded(gvk.Group, gvk.Kind, t.Destination.Server) {
			d.excluded = append(d.excluded, keyOf(u))
			continue
		}
		o.opts = manifest.ParseOptions(t.SyncOptions, opOptions, manifest.SyncOptionsOf(u))
		if !o.hook.IsHook() {
			manifest.SetTracking(t.Project, t.App, u)
		}
		d.objs = append(d.objs, o)
	}
	a.kinds.remember(t, d.objs)
	return d, nil
}

const apiextensionsClusterScope = "Cluster"

// crdScopes returns the kinds defined by the CRDs among objs, with scope.
func crdScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]string {
	out := map[schema.GroupKind]string{}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" || u.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		out[schema.GroupKind{Group: group, Kind: kind}] = scope
	}
	return out
}

// unmapped explains an object whose kind the cluster does not serve; the
// error is permanent unless a CRD in the manifests defines the kind (it
// may not be established yet).
func (d *desired) unmapped(o *object) error {
	gvk := o.obj.GroupVersionKind()
	if _, ok := d.crds[gvk.GroupKind()]; ok {
		return fmt.Errorf("%s %s: kind is not served yet (its CRD is in the manifests but not established)", gvk, o.obj.GetName())
	}
	return fmt.Errorf("%w: %s %s", ErrUnknownKind, gvk, o.obj.GetName())
}

// remap retries the mapping of an object whose kind was not served when
// the manifests were loaded (a CRD applied in an earlier wave). Objects of
// one kind share the answer, and the mapper's discovery is refreshed at
// most every remapEvery.
func (d *desired) remap(o *object) error {
	if o.mapping != nil {
		return nil
	}
	gvk := o.obj.GroupVersionKind()
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.remapped[gvk]; ok {
		o.mapping = m
		return nil
	}
	m, err := d.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) && time.Since(d.reset) >= remapEvery {
		d.c.Mapper.Reset()
		d.reset = time.Now()
		m, err = d.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return d.unmapped(o)
	}
	if err != nil {
		return fmt.Errorf("map %s: %w", gvk, err)
	}
	if d.remapped == nil {
		d.remapped = map[schema.GroupVersionKind]*meta.RESTMapping{}
	}
	d.remapped[gvk] = m
	o.mapping = m
	return nil
}

const remapEvery = 100 * time.Millisecond

// crdWait bounds how long an apply waits for a kind whose CRD is in the
// manifests to be served.
const crdWait = 30 * time.Second

// awaitKind maps o, waiting (with back-off, at most crdWait) for its kind
// to be served when a CRD in the manifests defines it: a CRD applied a
// moment ago is served only once it is established.
func (d *desired) awaitKind(ctx context.Context, o *object) error {
	err := d.remap(o)
	if err == nil || errors.Is(err, ErrUnknownKind) {
		return err
	}
	deadline := time.NewTimer(crdWait)
	defer deadline.Stop()
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return err
		case <-time.After(delay):
		}
		if err = d.remap(o); err == nil {
			return nil
		}
	}
}

// resources are the objects that take part in the diff: plain resources,
// not hooks or skipped objects.
func (d *desired) resources() []*object {
	var out []*object
	for _, o := range d.objs {
		if !o.hook.IsHook() {
			out = append(out, o)
		}
	}
	return out
}

// selected reports whether key is part of a selective sync (every key is
// when the operation names no resources). An empty namespace in the
// selection matches any.
func selected(op SyncOperation, k appspec.ResourceKey) bool {
	if len(op.Resources) == 0 {
		return true
	}
	return slices.ContainsFunc(op.Resources, func(s appspec.ResourceKey) bool {
		return s.Group == k.Group && s.Kind == k.Kind && s.Name == k.Name && (s.Namespace == "" || s.Namespace == k.Namespace)
	})
}

// expand lays the objects out in sync order: one entry per resource of
// the Sync phase and one per phase of each hook (named for the sync),
// sorted by phase, wave, kind and name. PostDelete hooks are left out
// (DeleteApp runs them); skipped objects are reported.
func (d *desired) expand(t Target, op SyncOperation) (steps []*object, skipped []ResourceResult) {
	hooksRun := op.Strategy != StrategyApply && len(op.Resources) == 0
	for _, o := range d.objs {
		switch {
		case o.hook.Skip:
			skipped = append(skipped, o.result(ActionSkipped, o.hook.Note))
		case !o.hook.IsHook():
			if selected(op, o.key()) {
				c := *o
				c.phase = PhaseSync
				steps = append(steps, &c)
			}
		case !hooksRun:
			if !slices.Equal(o.hook.Phases, []string{PhasePostDelete}) {
				why := "hooks are not run with the apply strategy"
				if len(op.Resources) > 0 {
					why = "hooks are not run in a selective sync"
				}
				skipped = append(skipped, o.result(ActionSkipped, why))
			}
		default:
			for _, phase := range o.hook.Phases {
				if phase != PhasePostDelete {
					steps = append(steps, o.forPhase(t, op.SyncID, phase))
				}
			}
		}
	}
	sortObjects(steps)
	return steps, skipped
}

// forPhase is a copy of hook o named and stamped for one sync and phase.
func (o *object) forPhase(t Target, syncID, phase string) *object {
	c := *o
	c.obj = o.obj.DeepCopy()
	c.phase = phase
	manifest.StampHook(c.obj, syncID, phase)
	manifest.SetTracking(t.Project, t.App, c.obj)
	return &c
}

func sortObjects(objs []*object) {
	slices.SortStableFunc(objs, func(a, b *object) int {
		if d := manifest.PhaseRank(a.phase) - manifest.PhaseRank(b.phase); d != 0 {
			return d
		}
		if a.wave != b.wave {
			return a.wave - b.wave
		}
		switch {
		case manifest.KindLess(a.obj, b.obj):
			return -1
		case manifest.KindLess(b.obj, a.obj):
			return 1
		}
		return 0
	})
}

// inStep returns the expanded objects of one step.
func inStep(objs []*object, s Step) []*object {
	var out []*object
	for _, o := range objs {
		if o.phase == s.Phase && o.wave == s.Wave {
			out = append(out, o)
		}
	}
	return out
}

// appName is "<project>/<app>", as OwnerApp returns it.
func appName(t Target) string { return t.Project + "/" + t.App }

func describe(k appspec.ResourceKey) string {
	var b strings.Builder
	b.WriteString(k.Kind)
	b.WriteByte(' ')
	if k.Namespace != "" {
		b.WriteString(k.Namespace + "/")
	}
	b.WriteString(k.Name)
	return b.String()
}
