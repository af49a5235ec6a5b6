package frontdoor

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// Apps creates, deletes and reads Windlass apps and projects;
// *api.Server is one. Its errors are *api.Problem.
type Apps interface {
	ApplyApplication(ctx context.Context, spec appspec.Application) (workflows.AppView, error)
	// SyncApplication starts a sync of an app.
	SyncApplication(ctx context.Context, project, name string, req workflows.SyncRequest) (workflows.SyncAccepted, error)
	DeleteApplication(ctx context.Context, project, name, cascade, initiator string) (workflows.DeleteResult, error)
	// MoveApplication moves an app from a project to spec.Project.
	MoveApplication(ctx context.Context, from string, spec appspec.Application, initiator string) (workflows.AppView, error)
	Application(ctx context.Context, project, name string) (workflows.AppView, error)
	// ApplicationNames lists the apps as project and name pairs.
	ApplicationNames(ctx context.Context) ([][2]string, error)
	ApplyProject(ctx context.Context, p appspec.Project) error
	DeleteProject(ctx context.Context, name string) error
	Project(ctx context.Context, name string) (appspec.Project, error)
}

var _ Apps = (*api.Server)(nil)

// Config configures a Controller.
type Config struct {
	// Namespaces are the namespaces whose Applications are watched.
	Namespaces []string
	// StatusEvery is how often every resource's status is compared with
	// its app's (default 10 s); it is written only when it differs.
	StatusEvery time.Duration
	// Workers reconcile resources in parallel (default 2).
	Workers int
	Logger  *slog.Logger
	// now is the clock of condition times; resource and projects the
	// watched resources (tests; default Applications and AppProjects).
	now      func() time.Time
	resource schema.GroupVersionResource
	projects schema.GroupVersionResource
}

// The kinds of resource the front door watches.
const (
	kindApp     = "Application"
	kindProject = "AppProject"
)

// item is a queued resource: its kind and namespace/name, or (as a key
// of informers) its kind and namespace.
type item struct{ kind, key string }

// Log messages.
const (
	msgApplied        = "front door resource applied"
	msgMoved          = "front door application moved to another project"
	msgRefused        = "front door resource refused"
	msgDeleted        = "front door resource deleted, and what it declared"
	msgReconcileError = "front door reconcile failed"
	msgWatching       = "watching application resources"
	msgSweepFailed    = "front door sweep of apps whose resource is gone failed"
)

// awaitingRetry is how long a deletion waiting for approval waits before
// it asks again; operationPoll how soon an app just applied, or syncing,
// is looked at again.
const (
	awaitingRetry = 30 * time.Second
	operationPoll = 2 * time.Second
)

// Controller keeps one Windlass app per watched Application resource.
type Controller struct {
	dyn   dynamic.Interface
	apps  Apps
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[item]
	// informers by kind and namespace.
	informers map[item]cache.SharedIndexInformer

	mu sync.Mutex
	// applied holds the hash of the spec last applied for each resource,
	// so that an unchanged resource is not applied again.
	applied map[item]string
	// gone holds the app (or project) of each resource deleted without
	// the finalizer, until it is removed.
	gone map[item]appRef
	// written holds, for each resource, the status last written and the
	// status the API server stored for it, which differ where a CRD's
	// schema prunes fields (Argo CD's own CRD may know fewer).
	written map[item][2]string
	// opRefused holds, for each resource, why its last operation did not
	// run, shown as a condition until an operation runs.
	opRefused map[item]condition
	// passes counts the status passes queued so far (tests).
	passes atomic.Int64
}

// New makes a controller of the Applications and AppProjects in
// cfg.Namespaces.
func New(dyn dynamic.Interface, apps Apps, cfg Config) (*Controller, error) {
	if len(cfg.Namespaces) == 0 {
		return nil, errors.New("frontdoor: no namespace to watch")
	}
	if cfg.StatusEvery <= 0 {
		cfg.StatusEvery = 10 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if cfg.resource.Empty() {
		cfg.resource = Applications
	}
	if cfg.projects.Empty() {
		cfg.projects = AppProjects
	}
	c := &Controller{
		dyn: dyn, apps: apps, cfg: cfg,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "frontdoor"}),
		informers: map[item]cache.SharedIndexInformer{},
		applied:   map[item]string{}, gone: map[item]appRef{}, written: map[item][2]string{}, opRefused: map[item]condition{},
	}
	for _, ns := range cfg.Namespaces {
		for _, kind := range []string{kindApp, kindProject} {
			if _, dup := c.informers[item{kind, ns}]; dup {
				continue
			}
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
			inf := f.ForResource(c.resource(kind)).Informer()
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj any) { c.enqueue(kind, obj) },
				UpdateFunc: func(_, obj any) { c.enqueue(kind, obj) },
				DeleteFunc: func(obj any) { c.deleted(kind, obj) },
			}); err != nil {
				return nil, err
			}
			c.informers[item{kind, ns}] = inf
		}
	}
	return c, nil
}

// resource is the watched resource of kind.
func (c *Controller) resource(kind string) schema.GroupVersionResource {
	if kind == kindProject {
		return c.cfg.projects
	}
	return c.cfg.resource
}

func (c *Controller) enqueue(kind string, obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(item{kind, key})
	}
}

// deleted remembers the app (or project) of a deleted resource, then
// enqueues it.
func (c *Controller) deleted(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(u)
	if err != nil {
		return
	}
	it := item{kind, key}
	c.mu.Lock()
	c.gone[it] = refOf(u.Object)
	delete(c.applied, it)
	delete(c.written, it)
	delete(c.opRefused, it)
	c.mu.Unlock()
	c.queue.Add(it)
}

// Run watches until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	c.dropMissingProjects(ctx)
	synced := []cache.InformerSynced{}
	for _, inf := range c.informers {
		go inf.RunWithContext(ctx)
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	c.cfg.Logger.Info(msgWatching, "namespaces", c.cfg.Namespaces)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	wg.Go(func() {
		if err := c.sweep(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn(msgSweepFailed, "error", err)
		}
	})
	t := time.NewTicker(c.cfg.StatusEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.queue.ShutDown()
			wg.Wait()
			return nil
		case <-t.C:
			for it, inf := range c.informers {
				for _, key := range inf.GetIndexer().ListKeys() {
					c.queue.Add(item{it.kind, key})
				}
			}
			c.passes.Add(1)
		}
	}
}

// sweep queues the removal of the apps whose Application resource, in a
// watched namespace, was deleted without the finalizer while no front
// door ran; their resources stay, as they would have.
func (c *Controller) sweep(ctx context.Context) error {
	names, err := c.apps.ApplicationNames(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		v, err := c.apps.Application(ctx, n[0], n[1])
		if err != nil {
			continue
		}
		by := v.Spec.Annotations[DeclaredBy]
		ns, _, ok := strings.Cut(by, "/")
		inf, watched := c.informers[item{kindApp, ns}]
		if !ok || !watched {
			continue
		}
		if _, exists, err := inf.GetIndexer().GetByKey(by); err != nil || exists {
			continue
		}
		it := item{kindApp, by}
		c.mu.Lock()
		c.gone[it] = appRef{project: n[0], name: n[1]}
		c.mu.Unlock()
		c.queue.Add(it)
	}
	return nil
}

// next reconciles one key; false once the queue shuts down.
func (c *Controller) next(ctx context.Context) bool {
	it, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(it)
	if err := c.reconcile(ctx, it); err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Warn(msgReconcileError, "kind", it.kind, "resource", it.key, "error", err)
		}
		c.queue.AddRateLimited(it)
		return true
	}
	c.queue.Forget(it)
	return true
}

// reconcile brings the app (or project) of resource it, and the
// resource's status, up to date.
func (c *Controller) reconcile(ctx context.Context, it item) error {
	ns, _, _ := strings.Cut(it.key, "/")
	inf, ok := c.informers[item{it.kind, ns}]
	if !ok {
		return nil
	}
	obj, exists, err := inf.GetIndexer().GetByKey(it.key)
	if err != nil {
		return err
	}
	switch u, _ := obj.(*unstructured.Unstructured); {
	case it.kind == kindProject && !exists:
		return c.removeGoneProject(ctx, it)
	case it.kind == kindProject:
		return c.reconcileProject(ctx, it, u)
	case !exists:
		return c.removeGone(ctx, it.key)
	default:
		return c.reconcileApp(ctx, it.key, u)
	}
}

// reconcileApp brings the app of Application key, and its status, up to
// date.
func (c *Controller) reconcileApp(ctx context.Context, key string, u *unstructured.Unstructured) error {
	if u.GetDeletionTimestamp() != nil {
		return c.finalize(ctx, key, u)
	}
	spec, err := specOf(u.Object, key)
	if err != nil {
		// Nothing is applied; the app, if any, keeps its spec.
		return c.refuseApp(ctx, u, c.viewOf(ctx, key, refOf(u.Object)), err.Error())
	}
	view, err := c.apps.Application(ctx, spec.Project, spec.Name)
	found := err == nil
	if err != nil && !isStatus(err, http.StatusNotFound) {
		return err
	}
	if found && view.Spec.Annotations[DeclaredBy] != "" && view.Spec.Annotations[DeclaredBy] != key {
		msg := fmt.Sprintf("application %s/%s is declared by the Application %s", spec.Project, spec.Name, view.Spec.Annotations[DeclaredBy])
		return c.refuseApp(ctx, u, nil, msg)
	}
	if !found {
		// A changed spec.project moves the app this resource declared.
		if from, err := c.declaredElsewhere(ctx, key, spec); err != nil {
			return err
		} else if from != "" {
			v, err := c.apps.MoveApplication(ctx, from, spec, "application "+key)
			if msg, refused := refusal(err); refused {
				return c.refuseApp(ctx, u, c.viewOf(ctx, key, appRef{from, spec.Name}), msg)
			}
			if err != nil {
				return err
			}
			c.cfg.Logger.Info(msgMoved, "resource", key, "from", from, "to", spec.Project)
			view, found = v, true
		}
	}
	h := hashOf(spec)
	c.mu.Lock()
	it := item{kindApp, key}
	if found && c.applied[it] != h && hashOf(view.Spec) == h {
		c.applied[it] = h // applied before a restart
	}
	apply := !found || c.applied[it] != h
	c.mu.Unlock()
	if apply {
		v, err := c.apps.ApplyApplication(ctx, spec)
		if msg, refused := refusal(err); refused {
			var cur *workflows.AppView
			if found {
				cur = &view
			}
			// The next status pass tries again (a project may appear, an
			// app being deleted may be gone).
			return c.refuseApp(ctx, u, cur, msg)
		}
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.applied[it] = h
		c.mu.Unlock()
		c.cfg.Logger.Info(msgApplied, "kind", kindApp, "resource", key, "app", spec.Project+"/"+spec.Name)
		view = v
	}
	cond, started, err := c.runOperation(ctx, u, appRef{spec.Project, spec.Name})
	if err != nil {
		return err
	}
	if apply || started || view.Status.Operation != nil {
		// A sync may be starting or running: look again soon.
		c.queue.AddAfter(it, operationPoll)
	}
	c.mu.Lock()
	switch {
	case cond != nil:
		c.opRefused[it] = *cond
	case started:
		delete(c.opRefused, it)
	}
	refused, ok := c.opRefused[it]
	c.mu.Unlock()
	if cond != nil {
		c.cfg.Logger.Info(msgRefused, "kind", kindApp, "resource", key, "error", cond.Message)
	}
	if ok {
		return c.writeAppStatus(ctx, u, &view, refused)
	}
	return c.writeAppStatus(ctx, u, &view)
}

// refuseApp reports why Application u is not applied, in an
// InvalidSpecError condition beside the status of its app (view, nil for
// none), and logs it when it is news.
func (c *Controller) refuseApp(ctx context.Context, u *unstructured.Unstructured, view *workflows.AppView, msg string) error {
	prev, _ := u.Object["status"].(map[string]any)
	if !slices.ContainsFunc(prevConditions(prev), func(o condition) bool { return o.Type == condInvalidSpec && o.Message == msg }) {
		c.cfg.Logger.Info(msgRefused, "kind", kindApp, "resource", u.GetNamespace()+"/"+u.GetName(), "error", msg)
	}
	return c.writeAppStatus(ctx, u, view, condition{Type: condInvalidSpec, Message: msg})
}

// declaredElsewhere is the project of the running app named spec.Name,
// in a project other than spec.Project, that Application key declared;
// "" when there is none.
func (c *Controller) declaredElsewhere(ctx context.Context, key string, spec appspec.Application) (string, error) {
	names, err := c.apps.ApplicationNames(ctx)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if n[1] != spec.Name || n[0] == spec.Project {
			continue
		}
		if c.viewOf(ctx, key, appRef{n[0], n[1]}) != nil {
			return n[0], nil
		}
	}
	return "", nil
}

// viewOf is the view of ref's app if Application key declared it, or
// nil.
func (c *Controller) viewOf(ctx context.Context, key string, ref appRef) *workflows.AppView {
	v, err := c.apps.Application(ctx, ref.project, ref.name)
	if err != nil || v.Spec.Annotations[DeclaredBy] != key {
		return nil
	}
	return &v
}

// removeGone removes the app of a resource deleted without the finalizer;
// its resources stay.
func (c *Controller) removeGone(ctx context.Context, key string) error {
	it := item{kindApp, key}
	c.mu.Lock()
	ref, ok := c.gone[it]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	if err := c.deleteApp(ctx, key, ref, cascadeOrphan); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.gone, it)
	c.mu.Unlock()
	return nil
}

// deleteApp deletes ref's app with cascade if resource key declared it.
// It returns errAwaiting while resources marked Delete=confirm wait.
func (c *Controller) deleteApp(ctx context.Context, key string, ref appRef, cascade string) error {
	view, err := c.apps.Application(ctx, ref.project, ref.name)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if view.Spec.Annotations[DeclaredBy] != key {
		return nil // not this resource's app
	}
	if aw := view.Status.AwaitingDeletionApproval; len(aw) > 0 {
		return &awaitingError{keys: aw} // asked before
	}
	res, err := c.apps.DeleteApplication(ctx, ref.project, ref.name, cascade, "kubernetes: Application "+key+" deleted")
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(res.AwaitingApproval) > 0 {
		return &awaitingError{keys: res.AwaitingApproval}
	}
	c.cfg.Logger.Info(msgDeleted, "kind", kindApp, "resource", key, "app", ref.project+"/"+ref.name, "cascade", cascade)
	return nil
}

// awaitingError: the deletion waits for resources marked Delete=confirm.
type awaitingError struct{ keys []appspec.ResourceKey }

func (e *awaitingError) Error() string {
	names := make([]string, len(e.keys))
	for i, k := range e.keys {
		names[i] = k.String()
	}
	return "the deletion waits for the approval to delete " + strings.Join(names, ", ") + " (confirm-deletion)"
}

// finalize handles a resource being deleted: with Argo CD's resources
// finalizer, the app and its resources are deleted, then the finalizer is
// released. Without it the resource goes at once and removeGone follows.
func (c *Controller) finalize(ctx context.Context, key string, u *unstructured.Unstructured) error {
	cascade, has := cascadeOf(u.GetFinalizers())
	if !has {
		return nil
	}
	err := c.deleteApp(ctx, key, refOf(u.Object), cascade)
	var aw *awaitingError
	if errors.As(err, &aw) {
		c.queue.AddAfter(item{kindApp, key}, awaitingRetry)
		return c.writeAppStatus(ctx, u, c.viewOf(ctx, key, refOf(u.Object)), condition{Type: condDeletion, Message: aw.Error()})
	}
	if err != nil {
		if msg, refused := refusal(err); refused {
			_ = c.writeAppStatus(ctx, u, c.viewOf(ctx, key, refOf(u.Object)), condition{Type: condDeletion, Message: msg})
		}
		return err
	}
	c.mu.Lock()
	delete(c.applied, item{kindApp, key})
	c.mu.Unlock()
	cur, rest := u.GetFinalizers(), withoutFinalizer(u.GetFinalizers())
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/finalizers", "value": cur},
		{"op": "replace", "path": "/metadata/finalizers", "value": rest},
	})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(c.cfg.resource).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release the finalizer of %s: %w", key, err)
	}
	return nil
}

// writeAppStatus writes the status of Application u for view (nil: no
// app) and conds, unless u already has it.
func (c *Controller) writeAppStatus(ctx context.Context, u *unstructured.Unstructured, view *workflows.AppView, conds ...condition) error {
	prev, _ := u.Object["status"].(map[string]any)
	return c.writeStatus(ctx, kindApp, u, renderStatus(view, conds, prev, c.cfg.now()))
}

// writeStatus writes want as the status of u, of kind, unless u already
// has it.
func (c *Controller) writeStatus(ctx context.Context, kind string, u *unstructured.Unstructured, want map[string]any) error {
	cur := u.Object["status"]
	if sameStatus(cur, want) {
		return nil
	}
	key := u.GetNamespace() + "/" + u.GetName()
	it := item{kind, key}
	c.mu.Lock()
	last := c.written[it]
	c.mu.Unlock()
	if last == [2]string{hashOf(want), hashOf(cur)} {
		return nil // written before, and stored as the schema allows
	}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": want}})
	if err != nil {
		return err
	}
	// Argo CD's CRD has no status subresource: status is part of the
	// object. Where a CRD has one, the object's patch leaves status as it
	// was and the subresource takes it.
	r := c.dyn.Resource(c.resource(kind)).Namespace(u.GetNamespace())
	out, err := r.Patch(ctx, u.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
	if err == nil && !sameStatus(out.Object["status"], want) {
		out, err = r.Patch(ctx, u.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write the status of %s: %w", key, err)
	}
	c.mu.Lock()
	c.written[it] = [2]string{hashOf(want), hashOf(out.Object["status"])}
	c.mu.Unlock()
	return nil
}

// hashOf fingerprints a spec or a status.
func hashOf(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// isStatus says whether err is an API problem of status code.
func isStatus(err error, code int) bool {
	var p *api.Problem
	return errors.As(err, &p) && p.Status == code
}

// refusal is the message of an error that retrying cannot fix: a 4xx
// problem (a refused project or spec, an app being deleted).
func refusal(err error) (string, bool) {
	var p *api.Problem
	if !errors.As(err, &p) || p.Status < 400 || p.Status >= 500 || p.Status == http.StatusNotFound {
		return "", false
	}
	msg := p.Detail
	if p.Field != "" && !strings.Contains(msg, p.Field) {
		msg = p.Field + ": " + msg
	}
	return msg, true
}
