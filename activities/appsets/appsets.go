package appsets

import (
	"context"
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

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"golang.org/x/sync/errgroup"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// Activity names: wire contracts, never rename.
const (
	ReconcileName  = "appsets.Reconcile"
	DeleteAppsName = "appsets.DeleteApps"
)

// ownerPrefix marks a set in an app's spec.managedBy.app. It holds no
// "/", so that the app-of-apps code, which reads "<project>/<name>"
// there, never takes a set for a parent app.
const ownerPrefix = "applicationset:"

// Owner is the spec.managedBy.app of the apps of set name.
func Owner(name string) string { return ownerPrefix + name }

// SetOfOwner is the set named by a spec.managedBy.app, if it names one.
func SetOfOwner(owner string) (string, bool) {
	name, ok := strings.CutPrefix(owner, ownerPrefix)
	return name, ok && name != ""
}

// Error kinds of a pass that wrote nothing (ReconcileOutput.ErrorKind).
const (
	ErrKindInvalid     = "InvalidSpec"
	ErrKindDuplicate   = "DuplicateApplication"
	ErrKindTooMany     = "TooManyElements"
	ErrKindSource      = "GeneratorSourceFailed"
	ErrKindUnavailable = "GeneratorNotAvailable"
	ErrKindProject     = "ProjectRefused"
	ErrKindConflict    = "NotOwned"
)

// ErrTypeInvalid is the non-retryable error type of a bad input.
const ErrTypeInvalid = "InvalidAppSetInput"

// Generator evaluates a set; *appset.Evaluator is one.
type Generator interface {
	Generate(ctx context.Context, set appset.ApplicationSet) ([]appset.App, error)
}

// Apps reads and writes app workflows.
type Apps interface {
	// Spec is a running app's spec (false: no such running app).
	Spec(ctx context.Context, project, name string) (appspec.Application, bool, error)
	// Owned lists "<project>/<name>" of the running apps whose parent
	// (managedBy.app, as published) is owner.
	Owned(ctx context.Context, owner string) ([]string, error)
	// Upsert creates or updates an app.
	Upsert(ctx context.Context, spec appspec.Application) error
	// Delete deletes an app with a cascade, and waits for it.
	Delete(ctx context.Context, project, name, cascade, initiator string) error
}

// Projects reads the projects.
type Projects interface {
	Project(ctx context.Context, name string) (appspec.Project, error)
}

// Activities are the set workflow's activities.
type Activities struct {
	gen      Generator
	apps     Apps
	projects Projects
	log      *slog.Logger
}

// New checks the dependencies; a nil log is slog's default.
func New(gen Generator, apps Apps, projects Projects, log *slog.Logger) (*Activities, error) {
	if gen == nil || apps == nil || projects == nil {
		return nil, errors.New("appsets: generator, apps and projects are required")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Activities{gen: gen, apps: apps, projects: projects, log: log}, nil
}

// Register registers the activities under their names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Reconcile, activity.RegisterOptions{Name: ReconcileName})
	r.RegisterActivityWithOptions(a.DeleteApps, activity.RegisterOptions{Name: DeleteAppsName})
}

// ReconcileInput is one pass over a set.
type ReconcileInput struct {
	Set appset.ApplicationSet `json:"set"`
	// Owned are the apps the set recorded as its own, "<project>/<name>":
	// with the published list, what may be deleted.
	Owned []string `json:"owned,omitempty"`
}

// ReconcileOutput is what a pass did.
type ReconcileOutput struct {
	// Apps are the set's apps after the pass, "<project>/<name>", sorted:
	// those generated and those kept (create-only, create-update).
	Apps []string `json:"apps"`
	// Generated counts the apps the generators yield.
	Generated int `json:"generated"`
	// Created, Updated and Deleted name the apps changed; Kept those no
	// longer generated that the policy keeps.
	Created []string `json:"created,omitempty"`
	Updated []string `json:"updated,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
	Kept    []string `json:"kept,omitempty"`
	// Error, with its kind, says why the pass wrote nothing.
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"errorKind,omitempty"`
}

// failed is the output of a pass that wrote nothing.
func failed(in ReconcileInput, kind string, err error) ReconcileOutput {
	return ReconcileOutput{Apps: sortedCopy(in.Owned), Error: err.Error(), ErrorKind: kind}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// errorKind classifies an error of Generate.
func errorKind(err error) string {
	switch {
	case errors.Is(err, appset.ErrDuplicateApp):
		return ErrKindDuplicate
	case errors.Is(err, appset.ErrTooManyElements):
		return ErrKindTooMany
	case errors.Is(err, appset.ErrSource):
		return ErrKindSource
	case errors.Is(err, appset.ErrUnavailable):
		return ErrKindUnavailable
	}
	return ErrKindInvalid
}

// policy is the set's applicationsSync.
func policy(set appset.ApplicationSet) string {
	if p := set.Spec.SyncPolicy; p != nil && p.ApplicationsSync != "" {
		return p.ApplicationsSync
	}
	return appset.PolicySync
}

func mayUpdate(p string) bool { return p == appset.PolicySync || p == appset.PolicyCreateUpdate }
func mayDelete(p string) bool { return p == appset.PolicySync || p == appset.PolicyCreateDelete }

// cascade is how the set's apps delete their resources: with them, unless
// preserveResourcesOnDeletion keeps them.
func cascade(set appset.ApplicationSet) string {
	if p := set.Spec.SyncPolicy; p != nil && p.PreserveResourcesOnDeletion {
		return ""
	}
	return cluster.CascadeForeground
}

// desiredApp is one generated app and its live spec.
type desiredApp struct {
	spec   appspec.Application
	live   appspec.Application
	exists bool
}

// Reconcile evaluates the set and creates, updates and deletes its apps
// as its policy allows. An error of the set's own making is answered in
// the output with nothing written; an error of a dependency is returned
// and the pass retried.
func (a *Activities) Reconcile(ctx context.Context, in ReconcileInput) (ReconcileOutput, error) {
	set := in.Set
	if err := set.Validate(); err != nil {
		return failed(in, ErrKindInvalid, err), nil
	}
	owner := Owner(set.Metadata.Name)
	t := passTimes{start: time.Now()}
	generated, err := a.gen.Generate(ctx, set)
	if err != nil {
		if ctx.Err() != nil {
			return ReconcileOutput{}, ctx.Err()
		}
		return failed(in, errorKind(err), err), nil
	}
	ignores, err := ignoredPointers(set.Spec.IgnoreApplicationDifferences)
	if err != nil {
		return failed(in, ErrKindInvalid, err), nil
	}
	// Every check comes before the first write.
	desired := make([]desiredApp, 0, len(generated))
	projects := map[string]appspec.Project{}
	for _, g := range generated {
		spec := g.Application
		spec.ManagedBy = &appspec.ManagedBy{App: owner, Cascade: cascade(set)}
		spec = withoutAutomatedSync(set, spec)
		spec = spec.Defaulted()
		if err := spec.Validate(); err != nil {
			return failed(in, ErrKindInvalid, fmt.Errorf("application %s: %w", spec.Name, err)), nil
		}
		p, ok := projects[spec.Project]
		if !ok {
			if p, err = a.projects.Project(ctx, spec.Project); err != nil {
				return failed(in, ErrKindProject, fmt.Errorf("application %s: project %s: %w", spec.Name, spec.Project, err)), nil
			}
			projects[spec.Project] = p
		}
		if err := p.CheckApp(spec); err != nil {
			return failed(in, ErrKindProject, fmt.Errorf("application %s: not permitted by project %s: %w", spec.Name, spec.Project, err)), nil
		}
		live, exists, err := a.apps.Spec(ctx, spec.Project, spec.Name)
		if err != nil {
			return ReconcileOutput{}, fmt.Errorf("read application %s/%s: %w", spec.Project, spec.Name, err)
		}
		if exists && (live.ManagedBy == nil || live.ManagedBy.App != owner) {
			by := "the API"
			if live.ManagedBy != nil {
				by = live.ManagedBy.App
			}
			return failed(in, ErrKindConflict, fmt.Errorf("application %s/%s exists and is managed by %s, not by this set", spec.Project, spec.Name, by)), nil
		}
		desired = append(desired, desiredApp{spec: spec, live: live, exists: exists})
		activity.RecordHeartbeat(ctx, "checked "+spec.Name)
	}
	t.checked = time.Now()
	pol := policy(set)
	out := ReconcileOutput{Generated: len(desired)}
	keep := map[string]bool{}
	var writes []appspec.Application
	for _, d := range desired {
		id := d.spec.Project + "/" + d.spec.Name
		keep[id] = true
		out.Apps = append(out.Apps, id)
		spec := d.spec
		switch {
		case !d.exists:
			out.Created = append(out.Created, id)
		case !mayUpdate(pol):
			continue
		default:
			if spec, err = preserve(ctx, d.live, spec, ignores, set.Spec.PreservedFields); err != nil {
				return failed(in, ErrKindInvalid, fmt.Errorf("application %s: ignoreApplicationDifferences: %w", spec.Name, err)), nil
			}
			if sameJSON(d.live, spec) {
				continue
			}
			out.Updated = append(out.Updated, id)
		}
		writes = append(writes, spec)
	}
	if err := a.upsertAll(ctx, set.Metadata.Name, writes, &t); err != nil {
		return ReconcileOutput{}, err
	}
	published, err := a.apps.Owned(ctx, owner)
	if err != nil {
		return ReconcileOutput{}, fmt.Errorf("list applications of set %s: %w", set.Metadata.Name, err)
	}
	var gone []string
	for _, id := range sortedCopy(append(slices.Clone(in.Owned), published...)) {
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	still, err := a.stillOwned(ctx, owner, gone)
	if err != nil {
		return ReconcileOutput{}, err
	}
	if !mayDelete(pol) {
		for _, o := range still {
			out.Kept = append(out.Kept, o.id)
			out.Apps = append(out.Apps, o.id)
		}
	} else {
		if err := a.deleteAll(ctx, still, "applicationset "+set.Metadata.Name); err != nil {
			return ReconcileOutput{}, err
		}
		for _, o := range still {
			out.Deleted = append(out.Deleted, o.id)
		}
	}
	out.Apps = sortedCopy(out.Apps)
	a.log.Info("application set pass", "set", set.Metadata.Name, "generated", out.Generated,
		"created", len(out.Created), "updated", len(out.Updated), "deleted", len(out.Deleted),
		"check", t.checked.Sub(t.start), "writes", len(writes), "writing", t.writing, "slowestWrite", t.slowest,
		"total", time.Since(t.start))
	return out, nil
}

// writesInFlight bounds a pass's concurrent creates, updates and
// deletes, as the API's clients bound theirs. One at a time, a create
// waits for the app's first workflow task and a delete for its
// resources to go: 1000 creates took a loaded worker 3 minutes.
const writesInFlight = 8

// inFlight calls f for 0..n-1, writesInFlight at a time. The first
// error stops the rest and is returned, so that the pass is retried;
// what was written stays, and the retry finds it done.
func inFlight(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writesInFlight)
	for i := range n {
		g.Go(func() error { return f(gctx, i) })
	}
	return g.Wait()
}

// upsertAll creates or updates the apps, writesInFlight at a time.
func (a *Activities) upsertAll(ctx context.Context, set string, specs []appspec.Application, t *passTimes) error {
	var mu sync.Mutex
	return inFlight(ctx, len(specs), func(gctx context.Context, i int) error {
		id := specs[i].Project + "/" + specs[i].Name
		w := time.Now()
		if err := a.apps.Upsert(gctx, specs[i]); err != nil {
			if gctx.Err() == nil { // not stopped by another write's failure
				a.log.Warn("application set write failed", "set", set, "app", id, "after", time.Since(w), "error", err.Error())
			}
			return fmt.Errorf("apply application %s: %w", id, err)
		}
		mu.Lock()
		t.wrote(time.Since(w))
		mu.Unlock()
		activity.RecordHeartbeat(ctx, "applied "+id)
		return nil
	})
}

// ownedApp is a running app of a set, with its spec.
type ownedApp struct {
	id   string
	live appspec.Application
}

// stillOwned reads the apps ids ("<project>/<name>"), in order, and keeps
// those that run and that owner still owns.
func (a *Activities) stillOwned(ctx context.Context, owner string, ids []string) ([]ownedApp, error) {
	var out []ownedApp
	for _, id := range ids {
		proj, name, _ := strings.Cut(id, "/")
		live, exists, err := a.apps.Spec(ctx, proj, name)
		if err != nil {
			return nil, fmt.Errorf("read application %s: %w", id, err)
		}
		if exists && live.ManagedBy != nil && live.ManagedBy.App == owner {
			out = append(out, ownedApp{id: id, live: live})
		}
	}
	return out, nil
}

// deleteAll deletes the apps, each with its recorded cascade,
// writesInFlight at a time: each delete waits until its app's resources
// are gone.
func (a *Activities) deleteAll(ctx context.Context, apps []ownedApp, initiator string) error {
	return inFlight(ctx, len(apps), func(gctx context.Context, i int) error {
		proj, name, _ := strings.Cut(apps[i].id, "/")
		if err := a.apps.Delete(gctx, proj, name, cascadeOf(apps[i].live), initiator); err != nil {
			if gctx.Err() == nil {
				a.log.Warn("application set delete failed", "by", initiator, "app", apps[i].id, "error", err.Error())
			}
			return fmt.Errorf("delete application %s: %w", apps[i].id, err)
		}
		activity.RecordHeartbeat(ctx, "deleted "+apps[i].id)
		return nil
	})
}

// passTimes is where a pass spent its time, for its log line.
type passTimes struct {
	start, checked   time.Time
	writing, slowest time.Duration
}

func (t *passTimes) wrote(d time.Duration) {
	t.writing += d
	t.slowest = max(t.slowest, d)
}

// withoutAutomatedSync turns off the automated sync of an app of a
// RollingSync set, as Argo CD does: the set's rollout syncs it, step by
// step.
func withoutAutomatedSync(set appset.ApplicationSet, spec appspec.Application) appspec.Application {
	if !set.Spec.Strategy.IsRollingSync() || spec.SyncPolicy == nil || spec.SyncPolicy.Automated == nil {
		return spec
	}
	p := *spec.SyncPolicy
	p.Automated = nil
	spec.SyncPolicy = &p
	return spec
}

// cascadeOf is the cascade recorded on an app of a set.
func cascadeOf(live appspec.Application) string {
	if live.ManagedBy == nil || live.ManagedBy.Cascade == "" {
		return cluster.CascadeOrphan
	}
	return live.ManagedBy.Cascade
}

// DeleteAppsInput deletes the apps of a deleted set.
type DeleteAppsInput struct {
	Set   string   `json:"set"`
	Owned []string `json:"owned,omitempty"`
	// Exact deletes only Owned (one group of a Reverse deletion) and
	// waits until each is gone; otherwise every app the set owns goes.
	Exact bool `json:"exact,omitempty"`
	// Group numbers an Exact call, for its heartbeats.
	Group int `json:"group,omitempty"`
}

// DeleteAppsOutput names the apps deleted.
type DeleteAppsOutput struct {
	Deleted []string `json:"deleted,omitempty"`
}

// DeleteApps deletes every app the set owns, each with the cascade it
// was created with (preserveResourcesOnDeletion: its resources stay).
func (a *Activities) DeleteApps(ctx context.Context, in DeleteAppsInput) (DeleteAppsOutput, error) {
	if in.Set == "" {
		return DeleteAppsOutput{}, temporal.NewNonRetryableApplicationError("no set named", ErrTypeInvalid, nil)
	}
	owner := Owner(in.Set)
	var published []string
	if !in.Exact {
		var err error
		if published, err = a.apps.Owned(ctx, owner); err != nil {
			return DeleteAppsOutput{}, fmt.Errorf("list applications of set %s: %w", in.Set, err)
		}
	}
	still, err := a.stillOwned(ctx, owner, sortedCopy(append(slices.Clone(in.Owned), published...)))
	if err != nil {
		return DeleteAppsOutput{}, err
	}
	if err := a.deleteAll(ctx, still, "applicationset "+in.Set+" deleted"); err != nil {
		return DeleteAppsOutput{}, err
	}
	var out DeleteAppsOutput
	for _, o := range still {
		out.Deleted = append(out.Deleted, o.id)
	}
	if in.Exact {
		return out, a.waitGone(ctx, in.Group, out.Deleted)
	}
	return out, nil
}

// waitGone waits until none of the apps runs any more.
func (a *Activities) waitGone(ctx context.Context, group int, ids []string) error {
	for _, id := range ids {
		proj, name, _ := strings.Cut(id, "/")
		for {
			_, exists, err := a.apps.Spec(ctx, proj, name)
			if err != nil {
				return fmt.Errorf("read application %s: %w", id, err)
			}
			if !exists {
				break
			}
			activity.RecordHeartbeat(ctx, fmt.Sprintf("group %d: waiting for %s to go", group, id))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(gonePoll):
			}
		}
	}
	return nil
}

// gonePoll is the wait between two reads of an app being deleted.
const gonePoll = time.Second

func sameJSON(a, b any) bool {
	va, err1 := generic(a)
	vb, err2 := generic(b)
	return err1 == nil && err2 == nil && reflect.DeepEqual(va, vb)
}

// generic is v as JSON maps and slices.
func generic(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// keepKeys copies the keys of live named in keys into desired.
func keepKeys(live, desired map[string]string, keys []string) map[string]string {
	for _, k := range keys {
		v, ok := live[k]
		if !ok {
			continue
		}
		if desired == nil {
			desired = map[string]string{}
		} else {
			desired = maps.Clone(desired)
		}
		desired[k] = v
	}
	return desired
}

// remarshal decodes the generic JSON v into out.
func remarshal(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
