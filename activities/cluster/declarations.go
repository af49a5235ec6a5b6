package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// DeclarationGroup is the API group of the kinds that declare apps and
// projects instead of cluster objects (Argo CD's Application and AppProject).
const DeclarationGroup = "argoproj.io"

// Kinds that declare apps and projects.
const (
	KindApplication = "Application"
	KindAppProject  = "AppProject"
)

// IsDeclaration says whether a rendered object declares an app or a
// project (app of apps) rather than a cluster object.
func IsDeclaration(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == DeclarationGroup && (gvk.Kind == KindApplication || gvk.Kind == KindAppProject)
}

// ErrDeclaration: a declared app or project is refused (invalid, a cycle,
// forbidden by a project, or owned by another app).
var ErrDeclaration = failure.Permanent("DeclarationRefused", "declared application refused")

// ErrNoDeclarations: the manifests declare apps but this worker has no
// Declarations (WithDeclarations).
var ErrNoDeclarations = failure.Permanent("DeclarationsUnsupported", "app of apps is not configured on this worker")

// Declarations carries out the apps and projects an app's manifests
// declare (the app is their parent). Keys are of group DeclarationGroup,
// kind KindApplication or KindAppProject, without a namespace.
type Declarations interface {
	// Check refuses declarations the parent may not make: invalid ones,
	// a cycle, a child its project (or the child's) does not permit, a
	// name another app owns. The error names the child and the field.
	Check(ctx context.Context, parent Target, decls []*unstructured.Unstructured) error
	// Apply creates or updates one declared app or project, recording
	// the parent.
	Apply(ctx context.Context, parent Target, decl *unstructured.Unstructured, dryRun bool) (Action, error)
	// State is a declared object's state as the parent sees it. A child
	// app not reconciled since since (when not zero) is Progressing.
	State(ctx context.Context, parent Target, decl *unstructured.Unstructured, since time.Time) (DeclaredState, error)
	// Managed lists what the parent manages, with its state.
	Managed(ctx context.Context, parent Target) ([]DeclaredState, error)
	// Delete removes one object the parent manages: an app as its
	// recorded cascade says, a project once no app uses it.
	Delete(ctx context.Context, parent Target, key appspec.ResourceKey, dryRun bool) (string, error)
}

// DeclaredState is a declared app or project as its parent sees it.
type DeclaredState struct {
	appspec.ResourceKey
	// Sync is Synced when the child's spec is the declared one, OutOfSync
	// otherwise (and when it does not exist).
	Sync appspec.SyncStatus `json:"sync"`
	// Health is the child's: Missing when it does not exist, Progressing
	// while it syncs or is not yet synced, Healthy once it is Synced and
	// Healthy.
	Health  appspec.HealthStatus `json:"health"`
	Message string               `json:"message,omitempty"`
}

// WithDeclarations sets what carries out declared apps and projects
// (without it, manifests that declare any fail the sync).
func WithDeclarations(d Declarations) Option {
	return func(a *Activities) { a.decls = d }
}

// declKey is the key of a declaration: no namespace (Argo CD's control
// plane namespace means nothing here).
func declKey(u *unstructured.Unstructured) appspec.ResourceKey {
	return appspec.ResourceKey{Group: DeclarationGroup, Kind: u.GetKind(), Name: u.GetName()}
}

// declarations returns the declaring objects of d.
func (d *desired) declarations() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range d.objs {
		if o.decl {
			out = append(out, o.obj)
		}
	}
	return out
}

// checkDeclarations refuses the declarations of d that the parent may
// not make (see Declarations.Check).
func (a *Activities) checkDeclarations(ctx context.Context, t Target, d *desired) error {
	decls := d.declarations()
	if len(decls) == 0 {
		return nil
	}
	if a.decls == nil {
		return fmt.Errorf("%w: %s %s", ErrNoDeclarations, decls[0].GetKind(), decls[0].GetName())
	}
	return a.decls.Check(ctx, t, decls)
}

// applyDecl applies a declaration through Declarations.
func (a *Activities) applyDecl(ctx context.Context, t Target, op SyncOperation, o *object) (ResourceResult, *unstructured.Unstructured, error) {
	res := o.result(ActionFailed, "")
	if a.decls == nil {
		err := fmt.Errorf("%w: %s %s", ErrNoDeclarations, o.obj.GetKind(), o.obj.GetName())
		res.Message = err.Error()
		return res, nil, err
	}
	act, err := a.decls.Apply(ctx, t, o.obj, op.DryRun)
	if err != nil {
		res.Message = err.Error()
		return res, nil, err
	}
	res.Action = act
	if op.DryRun {
		res.Message = "dry run"
	}
	return res, nil, nil
}

// declPoll is how often a wave's wait reads the state of declared apps.
const declPoll = time.Second

// waitDecls waits until every declared app of a wave is Synced and
// Healthy, as the wave's resources are waited for (a Degraded child ends
// the wait as a Degraded resource does).
func (a *Activities) waitDecls(ctx context.Context, t Target, objs []*object, prog *waveProgress) (WaveOutput, error) {
	since := time.Now()
	tick := time.NewTicker(declPoll)
	defer tick.Stop()
	for {
		out := WaveOutput{Health: appspec.HealthHealthy}
		pending := false
		for _, o := range objs {
			st, err := a.decls.State(ctx, t, o.obj, since)
			if err != nil {
				return out, err
			}
			r := o.result(ActionWaited, st.Message)
			r.Health = st.Health
			out.Resources = append(out.Resources, r)
			switch {
			case st.Health == appspec.HealthDegraded && out.Failed == nil:
				k := r.ResourceKey
				out.Failed, out.Message = &k, describe(k)+": "+st.Message
			case st.Sync != appspec.SyncSynced || st.Health != appspec.HealthHealthy:
				pending = true
			}
			out.Health = appspec.Worse(out.Health, st.Health)
		}
		if out.Failed != nil {
			out.Health = appspec.HealthDegraded
			return out, nil
		}
		heartbeat(ctx, *prog) // WaitWave's detail, which a retry resumes from
		if !pending {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-tick.C:
		}
	}
}

// compareDecl is the compared status of a declaration.
func (a *Activities) compareDecl(ctx context.Context, t Target, o *object) (appspec.ResourceStatus, error) {
	rs := appspec.ResourceStatus{ResourceKey: o.key(), Version: o.obj.GroupVersionKind().Version}
	if a.decls == nil {
		rs.Status, rs.Health, rs.Message = appspec.SyncOutOfSync, appspec.HealthMissing, ErrNoDeclarations.Error()
		return rs, nil
	}
	st, err := a.decls.State(ctx, t, o.obj, time.Time{})
	if err != nil {
		return rs, err
	}
	rs.Status, rs.Health, rs.HealthMessage = st.Sync, st.Health, st.Message
	return rs, nil
}

// declaredExtra returns the statuses of the apps and projects the parent
// manages that its manifests no longer declare (they require pruning).
// With cached (compare and tree, not a sync), an app that this worker
// found lately to manage nothing is not asked (mayManage).
func (a *Activities) declaredExtra(ctx context.Context, t Target, d *desired, cached bool) ([]DeclaredState, error) {
	if a.decls == nil {
		return nil, nil
	}
	decls := d.declarations()
	if cached && len(decls) == 0 && !a.mayManage(t) {
		return nil, nil
	}
	managed, err := a.decls.Managed(ctx, t)
	if err != nil {
		return nil, err
	}
	a.parents.Store(appName(t), manages{yes: len(decls)+len(managed) > 0, at: time.Now()})
	want := map[appspec.ResourceKey]bool{}
	for _, u := range decls {
		want[declKey(u)] = true
	}
	out := slices.DeleteFunc(managed, func(s DeclaredState) bool { return want[s.ResourceKey] })
	// Apps before projects: a project goes once no app uses it.
	slices.SortStableFunc(out, func(x, y DeclaredState) int {
		switch {
		case x.Kind == y.Kind:
			return 0
		case x.Kind == KindApplication:
			return -1
		}
		return 1
	})
	return out, nil
}

// manages is what a worker last found an app to manage.
type manages struct {
	yes bool
	at  time.Time
}

// managesTTL is how long a worker trusts that an app manages nothing:
// another worker may have synced children for it meanwhile.
const managesTTL = 5 * time.Minute

// mayManage says whether the app may manage apps or projects: unknown
// or known to have declared or managed some, or found to have none more
// than managesTTL ago. An app gets children only by declaring them, so
// the compares of plain apps need not list what they manage.
func (a *Activities) mayManage(t Target) bool {
	v, ok := a.parents.Load(appName(t))
	if !ok {
		return true
	}
	m := v.(manages)
	return m.yes || time.Since(m.at) > managesTTL
}

// extraStatus is the status of a managed declaration no longer declared.
func extraStatus(s DeclaredState) appspec.ResourceStatus {
	return appspec.ResourceStatus{ResourceKey: s.ResourceKey, Version: "v1alpha1", Status: appspec.SyncOutOfSync,
		Health: s.Health, HealthMessage: s.Message, RequiresPruning: true}
}

// pruneDecls deletes (or reports) the managed declarations no longer
// declared, as prune does resources.
func (a *Activities) pruneDecls(ctx context.Context, t Target, d *desired, op SyncOperation, out *PruneOutput) error {
	extra, err := a.declaredExtra(ctx, t, d, false)
	if err != nil {
		return err
	}
	opts := d.opts
	for _, s := range extra {
		if !selected(op, s.ResourceKey) {
			continue
		}
		res := ResourceResult{ResourceKey: s.ResourceKey, Phase: PhaseSync, Action: ActionPruneSkipped}
		switch {
		case opts.Is(optPrune, "false"):
			res.Message = notePruneDisabled
		case !op.Prune:
			res.Message = noteRequiresPruning
		default:
			msg, err := a.decls.Delete(ctx, t, s.ResourceKey, op.DryRun)
			if err != nil {
				res.Action, res.Message = ActionFailed, err.Error()
				out.Resources = append(out.Resources, res)
				return err
			}
			res.Action, res.Message = ActionPruned, msg
			a.log.Info(msgPruned, "app", appName(t), "resource", res.String())
		}
		out.Resources = append(out.Resources, res)
	}
	return nil
}

// declNodes are the tree nodes of the declared and managed apps and
// projects (no UID of their own: "<kind>:<name>").
func (a *Activities) declNodes(ctx context.Context, t Target, d *desired) ([]ResourceNode, error) {
	if a.decls == nil {
		return nil, nil
	}
	var out []ResourceNode
	for _, u := range d.declarations() {
		st, err := a.decls.State(ctx, t, u, time.Time{})
		if err != nil {
			return nil, err
		}
		out = append(out, declNode(st))
	}
	extra, err := a.declaredExtra(ctx, t, d, true)
	if err != nil {
		return nil, err
	}
	for _, s := range extra {
		out = append(out, declNode(s))
	}
	return out, nil
}

func declNode(s DeclaredState) ResourceNode {
	return ResourceNode{ResourceKey: s.ResourceKey, Version: "v1alpha1", UID: s.Kind + ":" + s.Name, Managed: true,
		Health: s.Health, HealthMessage: s.Message}
}

// deleteDecls deletes the apps and projects a deleted parent manages
// (each app as its recorded cascade says); orphan leaves them.
func (a *Activities) deleteDecls(ctx context.Context, t Target, out *DeleteAppOutput) error {
	if a.decls == nil {
		return nil
	}
	managed, err := a.decls.Managed(ctx, t)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range managed {
		res := ResourceResult{ResourceKey: s.ResourceKey, Action: ActionDeleted}
		msg, err := a.decls.Delete(ctx, t, s.ResourceKey, false)
		if err != nil {
			res.Action, msg = ActionFailed, err.Error()
			errs = append(errs, err)
		}
		res.Message = msg
		out.Resources = append(out.Resources, res)
		heartbeat(ctx, waveProgress{}) // DeleteApp's detail
	}
	return errors.Join(errs...)
}
