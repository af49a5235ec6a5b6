package children

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// AnnotationManagedBy on a stored project names the app whose manifests
// declare it, "<project>/<name>".
const AnnotationManagedBy = "windlass.dev/managed-by"

// argoFinalizer is Argo CD's cascade-delete finalizer; with the suffix
// /background the deletion does not wait for the resources.
const argoFinalizer = "resources-finalizer.argocd.argoproj.io"

// maxDepth bounds the walk up the parents when looking for a cycle.
const maxDepth = 32

// Apps is the Temporal side: the app workflows.
type Apps interface {
	// View returns a running app's view (false: no such running app).
	View(ctx context.Context, project, name string) (workflows.AppView, bool, error)
	// Find lists the projects of the running apps named name.
	Find(ctx context.Context, name string) ([]string, error)
	// Children lists "<project>/<name>" of the running apps whose
	// WindlassParent is parent.
	Children(ctx context.Context, parent string) ([]string, error)
	// Upsert creates or updates an app (Update-With-Start of setSpec).
	Upsert(ctx context.Context, spec appspec.Application) error
	// Move moves an app from a project to spec.Project (the move update).
	Move(ctx context.Context, from string, spec appspec.Application, initiator string) error
	// Delete deletes an app with a cascade.
	Delete(ctx context.Context, project, name, cascade, initiator string) error
	// Sync starts a sync, Refresh asks for a refresh.
	Sync(ctx context.Context, project, name, initiator string) error
	Refresh(ctx context.Context, project, name, reason string) error
	// UsesProject says whether a running app is in the project.
	UsesProject(ctx context.Context, project string) (bool, error)
}

// Projects is the settings side: the stored projects.
type Projects interface {
	Project(ctx context.Context, name string) (appspec.Project, error)
	Projects(ctx context.Context) ([]appspec.Project, error)
	PutProject(ctx context.Context, p appspec.Project) error
	DeleteProject(ctx context.Context, name string) error
	ReadOnly(name string) bool
}

// Children implements cluster.Declarations.
type Children struct {
	apps     Apps
	projects Projects
	// nudged remembers the children a wave's wait has refreshed or synced,
	// so that it does so once per wait.
	mu     sync.Mutex
	nudged map[string]bool
}

var _ cluster.Declarations = (*Children)(nil)

// New checks its dependencies.
func New(apps Apps, projects Projects) (*Children, error) {
	if apps == nil || projects == nil {
		return nil, errors.New("children: apps and projects are required")
	}
	return &Children{apps: apps, projects: projects, nudged: map[string]bool{}}, nil
}

func parentOf(t cluster.Target) string { return t.Project + "/" + t.App }

// refused wraps a refusal of one declaration.
func refused(kind, name, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s: %s", cluster.ErrDeclaration, kind, name, fmt.Sprintf(format, args...))
}

// decoded is one parsed declaration.
type decoded struct {
	app     *appspec.Application
	project *appspec.Project
	cascade string
}

// decode parses a declaration as Argo CD YAML is parsed by the API, and
// records the parent on an app.
func decode(parent cluster.Target, u *unstructured.Unstructured) (decoded, error) {
	body, err := json.Marshal(u.Object)
	if err != nil {
		return decoded{}, err
	}
	if u.GetKind() == cluster.KindAppProject {
		p, err := appspec.ParseProject(body)
		if err != nil {
			return decoded{}, refused(u.GetKind(), u.GetName(), "%v", err)
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationManagedBy] = parentOf(parent)
		return decoded{project: &p}, nil
	}
	spec, err := appspec.ParseApplication(body)
	if err != nil {
		return decoded{}, refused(u.GetKind(), u.GetName(), "%v", err)
	}
	d := decoded{app: &spec, cascade: cascadeOf(u.GetFinalizers())}
	spec.ManagedBy = &appspec.ManagedBy{App: parentOf(parent), Cascade: d.cascade}
	return d, nil
}

// cascadeOf reads Argo CD's finalizer: foreground or background deletion
// of the app's resources, or "" to keep them.
func cascadeOf(finalizers []string) string {
	switch {
	case slices.Contains(finalizers, argoFinalizer), slices.Contains(finalizers, argoFinalizer+"/foreground"):
		return cluster.CascadeForeground
	case slices.Contains(finalizers, argoFinalizer+"/background"):
		return cluster.CascadeBackground
	}
	return ""
}

// Check refuses what the parent may not declare.
func (c *Children) Check(ctx context.Context, parent cluster.Target, decls []*unstructured.Unstructured) error {
	ds := make([]decoded, len(decls))
	declared := map[string]appspec.Project{}
	seen := map[string]bool{}
	for i, u := range decls {
		d, err := decode(parent, u)
		if err != nil {
			return err
		}
		key := u.GetKind() + "/" + u.GetName()
		if seen[key] {
			return refused(u.GetKind(), u.GetName(), "declared twice")
		}
		seen[key] = true
		ds[i] = d
		if d.project != nil {
			if err := c.checkProject(ctx, parent, *d.project); err != nil {
				return err
			}
			declared[d.project.Name] = *d.project
		}
	}
	var ancestors []string
	for _, d := range ds {
		if d.app == nil {
			continue
		}
		if ancestors == nil {
			var err error
			if ancestors, err = c.ancestors(ctx, parent); err != nil {
				return err
			}
		}
		if err := c.checkApp(ctx, parent, *d.app, declared, ancestors); err != nil {
			return err
		}
	}
	return c.checkCycles(ctx, ds)
}

// checkCycles refuses declared apps whose dependencies (dependsOn) form a
// cycle, among themselves or through saved apps; a declared app's
// dependencies are those declared, not those saved.
func (c *Children) checkCycles(ctx context.Context, ds []decoded) error {
	apps := map[appspec.DependencyRef][]string{}
	for _, d := range ds {
		if d.app != nil {
			apps[appspec.DependencyRef{Project: d.app.Project, Name: d.app.Name}] = d.app.DependsOn
		}
	}
	lookup := func(ctx context.Context, ref appspec.DependencyRef) ([]string, bool, error) {
		if deps, ok := apps[ref]; ok {
			return deps, true, nil
		}
		v, ok, err := c.apps.View(ctx, ref.Project, ref.Name)
		return v.Spec.DependsOn, ok, err
	}
	for _, d := range ds {
		if d.app == nil {
			continue
		}
		if err := appspec.CheckCycle(ctx, *d.app, lookup); err != nil {
			return refused(cluster.KindApplication, d.app.Name, "field spec.%v", err)
		}
	}
	return nil
}

// ancestors are the parent and its parents, "<project>/<name>".
func (c *Children) ancestors(ctx context.Context, parent cluster.Target) ([]string, error) {
	out := []string{parentOf(parent)}
	proj, name := parent.Project, parent.App
	for range maxDepth {
		v, ok, err := c.apps.View(ctx, proj, name)
		if err != nil {
			return nil, fmt.Errorf("read app %s/%s: %w", proj, name, err)
		}
		if !ok || v.Spec.ManagedBy == nil {
			return out, nil
		}
		up := v.Spec.ManagedBy.App
		if slices.Contains(out, up) {
			return out, nil // a cycle above the parent is refused there
		}
		out = append(out, up)
		var found bool
		if proj, name, found = cut(up); !found {
			return out, nil
		}
	}
	return out, nil
}

func cut(app string) (string, string, bool) {
	for i := range len(app) {
		if app[i] == '/' {
			return app[:i], app[i+1:], true
		}
	}
	return "", "", false
}

func (c *Children) checkProject(ctx context.Context, parent cluster.Target, p appspec.Project) error {
	if c.projects.ReadOnly(p.Name) {
		return refused(cluster.KindAppProject, p.Name, "defined in the projects file; it cannot be declared in Git")
	}
	cur, err := c.projects.Project(ctx, p.Name)
	if err != nil {
		return nil // absent (or unreadable: the apply says so)
	}
	if owner := cur.Annotations[AnnotationManagedBy]; owner != "" && owner != parentOf(parent) {
		return refused(cluster.KindAppProject, p.Name, "already managed by application %s", owner)
	}
	return nil
}

func (c *Children) checkApp(ctx context.Context, parent cluster.Target, spec appspec.Application, declared map[string]appspec.Project, ancestors []string) error {
	name := spec.Name
	id := spec.Project + "/" + name
	if slices.Contains(ancestors, id) {
		return refused(cluster.KindApplication, name, "cycle: %s declares %s, which declares it (directly or through %v)", parentOf(parent), id, ancestors[1:])
	}
	pp, err := c.projects.Project(ctx, parent.Project)
	if err != nil {
		return fmt.Errorf("project %s of %s: %w", parent.Project, parentOf(parent), err)
	}
	var fe *appspec.FieldError
	if err := pp.CheckApp(spec); err != nil {
		field := "spec"
		if errors.As(err, &fe) {
			field = "spec." + fe.Field
		}
		return refused(cluster.KindApplication, name, "field %s: not permitted by project %s of parent %s: %v", field, parent.Project, parentOf(parent), err)
	}
	own, ok := declared[spec.Project]
	if !ok {
		if own, err = c.projects.Project(ctx, spec.Project); err != nil {
			return refused(cluster.KindApplication, name, "field spec.project: project %s does not exist", spec.Project)
		}
	}
	if err := own.CheckApp(spec); err != nil {
		field := "spec"
		if errors.As(err, &fe) {
			field = "spec." + fe.Field
		}
		return refused(cluster.KindApplication, name, "field %s: not permitted by its project %s: %v", field, spec.Project, err)
	}
	projs, err := c.apps.Find(ctx, name)
	if err != nil {
		return fmt.Errorf("look up application %s: %w", name, err)
	}
	for _, p := range projs {
		v, ok, err := c.apps.View(ctx, p, name)
		if err != nil {
			return fmt.Errorf("read application %s/%s: %w", p, name, err)
		}
		if p != spec.Project {
			if ok && v.Spec.ManagedBy != nil && v.Spec.ManagedBy.App == parentOf(parent) {
				continue // the declaration moves it (Apply)
			}
			return refused(cluster.KindApplication, name, "field metadata.name: the name is taken by application %s/%s", p, name)
		}
		if ok && v.Spec.ManagedBy != nil && v.Spec.ManagedBy.App != parentOf(parent) {
			return refused(cluster.KindApplication, name, "field metadata.name: application %s/%s is managed by application %s", p, name, v.Spec.ManagedBy.App)
		}
	}
	return nil
}

// Apply creates or updates a declared app or project.
func (c *Children) Apply(ctx context.Context, parent cluster.Target, u *unstructured.Unstructured, dryRun bool) (cluster.Action, error) {
	d, err := decode(parent, u)
	if err != nil {
		return cluster.ActionFailed, err
	}
	if d.project != nil {
		cur, err := c.projects.Project(ctx, d.project.Name)
		exists := err == nil
		switch {
		case exists && sameJSON(cur, *d.project):
			return cluster.ActionUnchanged, nil
		case dryRun:
		default:
			if err := c.projects.PutProject(ctx, *d.project); err != nil {
				return cluster.ActionFailed, fmt.Errorf("store project %s: %w", d.project.Name, err)
			}
		}
		if exists {
			return cluster.ActionConfigured, nil
		}
		return cluster.ActionCreated, nil
	}
	spec := d.app.Defaulted()
	cur, exists, err := c.apps.View(ctx, spec.Project, spec.Name)
	if err != nil {
		return cluster.ActionFailed, fmt.Errorf("read application %s/%s: %w", spec.Project, spec.Name, err)
	}
	if !exists {
		from, err := c.declaredElsewhere(ctx, parent, spec)
		switch {
		case err != nil:
			return cluster.ActionFailed, err
		case from != "" && dryRun:
			return cluster.ActionConfigured, nil
		case from != "":
			if err := c.apps.Move(ctx, from, spec, "application "+parentOf(parent)); err != nil {
				return cluster.ActionFailed, fmt.Errorf("move application %s to project %s: %w", spec.Name, spec.Project, err)
			}
			return cluster.ActionConfigured, nil
		}
	}
	switch {
	case exists && sameApp(cur.Spec, spec):
		return cluster.ActionUnchanged, nil
	case dryRun:
	default:
		if err := c.apps.Upsert(ctx, spec); err != nil {
			return cluster.ActionFailed, err
		}
	}
	if exists {
		return cluster.ActionConfigured, nil
	}
	return cluster.ActionCreated, nil
}

// declaredElsewhere is the project of the running app of spec's name, in
// another project, that parent declares: a changed spec.project moves
// it, as the API's move does, so that its syncs and resources stay. ""
// when there is none.
func (c *Children) declaredElsewhere(ctx context.Context, parent cluster.Target, spec appspec.Application) (string, error) {
	projs, err := c.apps.Find(ctx, spec.Name)
	if err != nil {
		return "", fmt.Errorf("look up application %s: %w", spec.Name, err)
	}
	for _, p := range projs {
		if p == spec.Project {
			continue
		}
		v, ok, err := c.apps.View(ctx, p, spec.Name)
		if err != nil {
			return "", fmt.Errorf("read application %s/%s: %w", p, spec.Name, err)
		}
		if ok && v.Spec.ManagedBy != nil && v.Spec.ManagedBy.App == parentOf(parent) {
			return p, nil
		}
	}
	return "", nil
}

// sameApp compares a child's spec with its declaration, ignoring the
// refresh annotation, which the app drops once it has refreshed: a
// declaration that keeps it refreshes the child when it changes, not on
// every parent sync.
func sameApp(live, declared appspec.Application) bool {
	if _, ok := declared.Annotations[appspec.AnnotationRefresh]; ok {
		declared.Annotations = maps.Clone(declared.Annotations)
		delete(declared.Annotations, appspec.AnnotationRefresh)
		if len(declared.Annotations) == 0 {
			declared.Annotations = nil
		}
	}
	return sameJSON(live, declared)
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}

// State reads a declared object's state.
func (c *Children) State(ctx context.Context, parent cluster.Target, u *unstructured.Unstructured, since time.Time) (cluster.DeclaredState, error) {
	st := cluster.DeclaredState{ResourceKey: appspec.ResourceKey{Group: cluster.DeclarationGroup, Kind: u.GetKind(), Name: u.GetName()},
		Sync: appspec.SyncOutOfSync, Health: appspec.HealthMissing}
	d, err := decode(parent, u)
	if err != nil {
		st.Message = err.Error()
		return st, nil
	}
	if d.project != nil {
		cur, err := c.projects.Project(ctx, d.project.Name)
		if err != nil {
			st.Message = "project does not exist"
			return st, nil
		}
		st.Health = appspec.HealthHealthy
		if sameJSON(cur, *d.project) {
			st.Sync = appspec.SyncSynced
		}
		return st, nil
	}
	spec := d.app.Defaulted()
	if spec.Project == parent.Project && spec.Name == parent.App {
		// Not queried: the parent's compare may run inside its own
		// workflow task, which a query of it would wait for.
		st.Health, st.Message = appspec.HealthDegraded, "cycle: the application declares itself"
		return st, nil
	}
	v, ok, err := c.apps.View(ctx, spec.Project, spec.Name)
	if err != nil {
		return st, fmt.Errorf("read application %s/%s: %w", spec.Project, spec.Name, err)
	}
	if !ok {
		st.Message = "application does not exist"
		return st, nil
	}
	if sameApp(v.Spec, spec) {
		st.Sync = appspec.SyncSynced
	}
	st.Health, st.Message = childHealth(v)
	if st.Sync == appspec.SyncSynced && !since.IsZero() {
		c.nudge(ctx, parent, v, since)
		if v.Status.ReconciledAt.Before(since) && st.Health == appspec.HealthHealthy {
			st.Health, st.Message = appspec.HealthProgressing, "waiting for the application to be compared"
		}
	}
	return st, nil
}

// childHealth is a child app's health as its parent counts it: Healthy
// only when it is Synced and Healthy, Progressing while it syncs or is
// not synced yet.
func childHealth(v workflows.AppView) (appspec.HealthStatus, string) {
	st := v.Status
	switch {
	case st.Operation != nil && (st.Operation.Phase == workflows.PhaseRunning || st.Operation.Phase == workflows.PhasePending):
		return appspec.HealthProgressing, "application is syncing"
	case st.Health == appspec.HealthDegraded:
		return appspec.HealthDegraded, "application is Degraded: " + st.Message
	case st.Sync != appspec.SyncSynced:
		return appspec.HealthProgressing, "application is " + string(st.Sync)
	case st.Health == "":
		return appspec.HealthUnknown, ""
	}
	return st.Health, ""
}

// nudge makes a wave's wait progress: it refreshes the child once, so
// that the child compares the spec just set, and starts a sync of a child
// without automated sync that is out of sync.
func (c *Children) nudge(ctx context.Context, parent cluster.Target, v workflows.AppView, since time.Time) {
	key := parentOf(parent) + "|" + v.Spec.Project + "/" + v.Spec.Name + "|" + since.String()
	c.mu.Lock()
	if len(c.nudged) > 10000 {
		c.nudged = map[string]bool{}
	}
	refreshed, synced := c.nudged[key+"|refresh"], c.nudged[key+"|sync"]
	c.nudged[key+"|refresh"] = true
	idle := v.Status.Operation == nil || (v.Status.Operation.Phase != workflows.PhaseRunning && v.Status.Operation.Phase != workflows.PhasePending)
	doSync := !synced && !v.Spec.IsAutomated() && idle && !v.Status.ReconciledAt.Before(since) && v.Status.Sync == appspec.SyncOutOfSync
	if doSync {
		c.nudged[key+"|sync"] = true
	}
	c.mu.Unlock()
	initiator := "app of apps: " + parentOf(parent)
	if !refreshed {
		_ = c.apps.Refresh(ctx, v.Spec.Project, v.Spec.Name, initiator)
	}
	if doSync {
		_ = c.apps.Sync(ctx, v.Spec.Project, v.Spec.Name, initiator)
	}
}

// Managed lists the apps and projects the parent manages.
func (c *Children) Managed(ctx context.Context, parent cluster.Target) ([]cluster.DeclaredState, error) {
	ids, err := c.apps.Children(ctx, parentOf(parent))
	if err != nil {
		return nil, fmt.Errorf("list children of %s: %w", parentOf(parent), err)
	}
	var out []cluster.DeclaredState
	for _, id := range ids {
		proj, name, _ := cut(id)
		v, ok, err := c.apps.View(ctx, proj, name)
		if err != nil {
			return nil, fmt.Errorf("read application %s: %w", id, err)
		}
		// The search attribute may lag behind the spec: the spec decides.
		if !ok || v.Spec.ManagedBy == nil || v.Spec.ManagedBy.App != parentOf(parent) {
			continue
		}
		st := cluster.DeclaredState{ResourceKey: appspec.ResourceKey{Group: cluster.DeclarationGroup, Kind: cluster.KindApplication, Name: name},
			Sync: appspec.SyncSynced}
		st.Health, st.Message = childHealth(v)
		out = append(out, st)
	}
	projs, err := c.projects.Projects(ctx)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	for _, p := range projs {
		if p.Annotations[AnnotationManagedBy] == parentOf(parent) {
			out = append(out, cluster.DeclaredState{ResourceKey: appspec.ResourceKey{Group: cluster.DeclarationGroup, Kind: cluster.KindAppProject, Name: p.Name},
				Sync: appspec.SyncSynced, Health: appspec.HealthHealthy})
		}
	}
	return out, nil
}

// Delete deletes an app the parent manages as its recorded cascade says,
// or a project it manages once no app uses it.
func (c *Children) Delete(ctx context.Context, parent cluster.Target, key appspec.ResourceKey, dryRun bool) (string, error) {
	if key.Kind == cluster.KindAppProject {
		p, err := c.projects.Project(ctx, key.Name)
		if err != nil || p.Annotations[AnnotationManagedBy] != parentOf(parent) {
			return "project is not managed by " + parentOf(parent) + "; kept", nil
		}
		used, err := c.apps.UsesProject(ctx, key.Name)
		if err != nil {
			return "", err
		}
		if used {
			return "kept: applications still use the project", nil
		}
		if dryRun {
			return "dry run", nil
		}
		if err := c.projects.DeleteProject(ctx, key.Name); err != nil {
			return "", fmt.Errorf("delete project %s: %w", key.Name, err)
		}
		return "project deleted", nil
	}
	ids, err := c.apps.Children(ctx, parentOf(parent))
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		proj, name, _ := cut(id)
		if name != key.Name {
			continue
		}
		v, ok, err := c.apps.View(ctx, proj, name)
		if err != nil {
			return "", err
		}
		if !ok || v.Spec.ManagedBy == nil || v.Spec.ManagedBy.App != parentOf(parent) {
			continue
		}
		cascade, msg := v.Spec.ManagedBy.Cascade, "application deleted with its resources ("+v.Spec.ManagedBy.Cascade+")"
		if cascade == "" {
			cascade, msg = cluster.CascadeOrphan, "application deleted; its resources are kept (no "+argoFinalizer+")"
		}
		if dryRun {
			return msg + "; dry run", nil
		}
		if err := c.apps.Delete(ctx, proj, name, cascade, "app of apps: "+parentOf(parent)); err != nil {
			return "", fmt.Errorf("delete application %s: %w", id, err)
		}
		return msg, nil
	}
	return "already gone", nil
}
