package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/internal/settings"
)

// TrackingAnnotation on a migrated app says how Argo CD tracked the app's
// objects (argocd-cm's application.resourceTrackingMethod), so that
// Windlass recognises them as the app's: annotation, label or
// annotation+label.
const TrackingAnnotation = manifest.AppAnnotationArgoTracking

// Action is what happens to one object.
type Action string

// The actions of a row. Failed is a create or update the Writer refused.
const (
	ActionCreate    Action = "create"
	ActionUpdate    Action = "update"
	ActionUnchanged Action = "unchanged"
	ActionSkip      Action = "skip"
	ActionRefuse    Action = "refuse"
	ActionFailed    Action = "failed"
)

// Row is one object of the plan and what happens to it.
type Row struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Action Action `json:"action"`
	Reason string `json:"reason,omitempty"`
	// apply carries out a create or update.
	apply func(ctx context.Context, w Writer) error
}

// Plan is the rows in the order Apply runs them: controllers, settings,
// notifications, projects, clusters, repositories, applications (whose
// subscriptions the notifications configuration must know).
type Plan struct {
	Rows []Row `json:"rows"`
}

// Current is what Windlass has now. Project and App return nil when
// there is no such object.
type Current interface {
	Project(ctx context.Context, name string) (*appspec.Project, error)
	App(ctx context.Context, project, name string) (*appspec.Application, error)
	// Apps lists the project and name of every app.
	Apps(ctx context.Context) ([]AppRef, error)
	Repos(ctx context.Context) ([]settings.RepositoryView, error)
	RepoCreds(ctx context.Context) ([]settings.RepositoryView, error)
	Clusters(ctx context.Context) ([]settings.ClusterView, error)
	// Notifications returns the saved notifications configuration ("" for
	// none) and the keys of the notifications secret.
	Notifications(ctx context.Context) (config string, secretKeys []string, err error)
}

// AppRef names an app.
type AppRef struct {
	Project string `json:"project"`
	Name    string `json:"name"`
}

// Writer creates or replaces Windlass objects; exists says which.
type Writer interface {
	PutProject(ctx context.Context, p appspec.Project, exists bool) error
	PutRepo(ctx context.Context, r settings.Repository, exists bool) error
	PutRepoCreds(ctx context.Context, r settings.Repository, exists bool) error
	PutCluster(ctx context.Context, c settings.Cluster, exists bool) error
	PutApp(ctx context.Context, a appspec.Application, exists bool) error
	// PutNotifications saves the notifications configuration (YAML of
	// argocd-notifications-cm's data); PutNotificationsSecret sets keys of
	// the notifications secret, leaving the others.
	PutNotifications(ctx context.Context, config string) error
	PutNotificationsSecret(ctx context.Context, data map[string][]byte) error
}

// Options configure Build.
type Options struct {
	// OutDir receives the settings that Windlass reads from files.
	OutDir string
	// Force plans the migration even while an application controller runs.
	Force bool
}

// Refused counts the rows refused or failed.
func (p *Plan) Refused() int {
	n := 0
	for _, r := range p.Rows {
		if r.Action == ActionRefuse || r.Action == ActionFailed {
			n++
		}
	}
	return n
}

// Apply carries out the creates and updates in order. A failure marks its
// row failed, with the error as the reason, and the rest go on.
func (p *Plan) Apply(ctx context.Context, w Writer) {
	for i := range p.Rows {
		r := &p.Rows[i]
		if r.apply == nil || (r.Action != ActionCreate && r.Action != ActionUpdate) {
			continue
		}
		if err := r.apply(ctx, w); err != nil {
			r.Action, r.Reason = ActionFailed, oneLine(err.Error())
		}
	}
}

// Print writes the plan as a table and a count of each action.
func (p *Plan) Print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tACTION\tREASON")
	counts := map[Action]int{}
	for _, r := range p.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Kind, r.Name, r.Action, r.Reason)
		counts[r.Action]++
	}
	tw.Flush()
	var parts []string
	for _, a := range []Action{ActionCreate, ActionUpdate, ActionUnchanged, ActionSkip, ActionRefuse, ActionFailed} {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
		}
	}
	fmt.Fprintf(out, "\n%s\n", strings.Join(parts, ", "))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (p *Plan) add(kind, name string, a Action, reason string, apply func(context.Context, Writer) error) {
	p.Rows = append(p.Rows, Row{Kind: kind, Name: name, Action: a, Reason: oneLine(reason), apply: apply})
}

// Build plans the migration of src against what Windlass has now. It
// reads from cur and writes nothing.
func Build(ctx context.Context, src *Source, cur Current, opts Options) (*Plan, error) {
	b := &builder{src: src, cur: cur, opts: opts, plan: &Plan{}, refusedProjects: map[string]bool{}}
	b.controllers()
	if src.AppNamespaces != "" {
		b.plan.add("Setting", CmdParamsCMName+" "+appNamespacesKey, ActionSkip,
			"the Applications of the namespaces matching "+src.AppNamespaces+" are read too; each keeps its namespace as its sourceNamespace", nil)
	}
	cfg := b.settings()
	if err := b.rbac(cfg); err != nil {
		return nil, err
	}
	if err := b.notifications(ctx); err != nil {
		return nil, err
	}
	if err := b.projects(ctx); err != nil {
		return nil, err
	}
	if err := b.clusters(ctx); err != nil {
		return nil, err
	}
	if err := b.repos(ctx); err != nil {
		return nil, err
	}
	if err := b.apps(ctx, cfg); err != nil {
		return nil, err
	}
	return b.plan, nil
}

type builder struct {
	src             *Source
	cur             Current
	opts            Options
	plan            *Plan
	refusedProjects map[string]bool
}

func (b *builder) controllers() {
	for _, c := range b.src.Controllers {
		name := c.Name
		if c.Namespace != b.src.Namespace {
			name = c.Namespace + "/" + c.Name
		}
		switch {
		case c.Replicas == 0:
			b.plan.add(c.Kind, name, ActionSkip, "Argo CD's application controller, scaled to 0", nil)
		case b.opts.Force:
			b.plan.add(c.Kind, name, ActionSkip, fmt.Sprintf("Argo CD's application controller runs (replicas: %d); --force: both will sync the same objects", c.Replicas), nil)
		default:
			b.plan.add(c.Kind, name, ActionRefuse, fmt.Sprintf("Argo CD's application controller runs (replicas: %d): scale it to 0 first, or pass --force", c.Replicas), nil)
		}
	}
}

// fileRow plans writing data to rel under OutDir: create, update or
// unchanged against what the file holds now.
func (b *builder) fileRow(kind, name, rel string, data []byte, reason string) {
	path := filepath.Join(b.opts.OutDir, filepath.FromSlash(rel))
	action := ActionCreate
	if old, err := os.ReadFile(path); err == nil {
		action = ActionUpdate
		if bytes.Equal(old, data) {
			action = ActionUnchanged
		}
	}
	b.plan.add(kind, name, action, path+": "+reason, func(context.Context, Writer) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, data, 0o644)
	})
}

// jsonEqual compares two values by their JSON, as the API sends them.
func jsonEqual(a, b any) bool {
	var x, y any
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || json.Unmarshal(ja, &x) != nil || json.Unmarshal(jb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// differs names the top-level JSON fields in which two objects differ.
func differs(a, b any) string {
	var x, y map[string]any
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || json.Unmarshal(ja, &x) != nil || json.Unmarshal(jb, &y) != nil {
		return "differs from Windlass's"
	}
	var fields []string
	for _, k := range sortedKeys(x) {
		if !reflect.DeepEqual(x[k], y[k]) {
			fields = append(fields, k)
		}
	}
	for _, k := range sortedKeys(y) {
		if _, ok := x[k]; !ok {
			fields = append(fields, k)
		}
	}
	slices.Sort(fields)
	return "Windlass's differs in " + strings.Join(fields, ", ")
}
