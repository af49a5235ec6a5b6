package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// clean keeps what an Argo CD object says of itself: no status, no
// operation in progress, no server-set metadata.
func clean(u unstructured.Unstructured) ([]byte, error) {
	obj := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}
	meta := map[string]any{"name": u.GetName()}
	if l := u.GetLabels(); len(l) > 0 {
		meta["labels"] = l
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		meta["annotations"] = a
	}
	if f := u.GetFinalizers(); len(f) > 0 {
		meta["finalizers"] = f
	}
	obj["metadata"] = meta
	if spec, ok := u.Object["spec"]; ok {
		obj["spec"] = spec
	}
	return json.Marshal(obj)
}

// clusterServers maps the names of Argo CD's clusters to their servers,
// from the cluster Secrets.
func (b *builder) clusterServers() map[string]string {
	m := map[string]string{"in-cluster": appspec.InClusterServer}
	for _, s := range b.src.Secrets {
		if s.Labels[SecretTypeLabel] == typeCluster && field(s, "name") != "" && field(s, "server") != "" {
			m[field(s, "name")] = strings.TrimSuffix(field(s, "server"), "/")
		}
	}
	return m
}

// byServer names a destination's cluster by its server when Argo CD
// names it (name: prod): Windlass names clusters by server URL. It returns
// a note of the change, or "".
func byServer(dest map[string]any, servers map[string]string) string {
	name, _ := dest["name"].(string)
	server, _ := dest["server"].(string)
	if name == "" || server != "" {
		return ""
	}
	neg, bare := "", name
	if n, ok := strings.CutPrefix(name, "!"); ok {
		neg, bare = "!", n
	}
	to, ok := servers[bare]
	if bare == "*" {
		to, ok = "*", true
	}
	if !ok {
		return ""
	}
	delete(dest, "name")
	dest["server"] = neg + to
	return "destination " + name + " is " + neg + to
}

// resolveNames applies byServer to an Application's destination or an
// AppProject's destinations.
func resolveNames(u unstructured.Unstructured, servers map[string]string) (unstructured.Unstructured, []string) {
	u = *u.DeepCopy()
	spec, _ := u.Object["spec"].(map[string]any)
	var notes []string
	if d, ok := spec["destination"].(map[string]any); ok {
		if n := byServer(d, servers); n != "" {
			notes = append(notes, n)
		}
	}
	if ds, ok := spec["destinations"].([]any); ok {
		for _, d := range ds {
			if m, ok := d.(map[string]any); ok {
				if n := byServer(m, servers); n != "" {
					notes = append(notes, n)
				}
			}
		}
	}
	return u, notes
}

// why is the reason of a refusal: the field and what is wrong with it.
func why(err error) string {
	var fe *appspec.FieldError
	if errors.As(err, &fe) {
		return fe.Field + ": " + fe.Reason
	}
	return err.Error()
}

func (b *builder) projects(ctx context.Context) error {
	for _, u := range b.src.Projects {
		name := u.GetName()
		u, notes := resolveNames(u, b.clusterServers())
		data, err := clean(u)
		if err != nil {
			return err
		}
		p, err := appspec.ParseProject(data)
		if err != nil {
			b.refusedProjects[name] = true
			b.plan.add("AppProject", name, ActionRefuse, why(err), nil)
			continue
		}
		old, err := b.cur.Project(ctx, name)
		if err != nil {
			return fmt.Errorf("project %s: %w", name, err)
		}
		if old != nil && p.Description == "" {
			// Argo CD's projects often have none: keep Windlass's.
			p.Description = old.Description
		}
		switch {
		case old == nil:
			b.plan.add("AppProject", name, ActionCreate, strings.Join(notes, "; "), func(ctx context.Context, w Writer) error { return w.PutProject(ctx, p, false) })
		case jsonEqual(*old, p):
			b.plan.add("AppProject", name, ActionUnchanged, "", nil)
		default:
			b.plan.add("AppProject", name, ActionUpdate, differs(*old, p), func(ctx context.Context, w Writer) error { return w.PutProject(ctx, p, true) })
		}
	}
	return nil
}

func (b *builder) apps(ctx context.Context, cfg appConfig) error {
	if len(b.src.Applications) == 0 {
		return nil
	}
	refs, err := b.cur.Apps(ctx)
	if err != nil {
		return fmt.Errorf("list applications: %w", err)
	}
	seen := map[string]string{} // app name: its Application's row name
	for _, u := range b.src.Applications {
		name := u.GetName()
		if ns := u.GetNamespace(); ns != "" && ns != b.src.Namespace {
			name = ns + "/" + name
		}
		u, notes := resolveNames(u, b.clusterServers())
		data, err := clean(u)
		if err != nil {
			return err
		}
		app, err := appspec.ParseApplication(data)
		if err != nil {
			b.plan.add("Application", name, ActionRefuse, why(err), nil)
			continue
		}
		notes = append(notes, appspec.ArgoWarnings(data)...)
		if n := app.Destination.Name; n != "" && b.clusterServers()[n] == "" {
			b.plan.add("Application", name, ActionRefuse, fmt.Sprintf("spec.destination.name: no cluster Secret names %q (Argo CD cannot sync it either)", n), nil)
			continue
		}
		if b.refusedProjects[app.Project] {
			b.plan.add("Application", name, ActionRefuse, "its project "+app.Project+" is refused", nil)
			continue
		}
		// Argo CD's names are unique across projects; two Windlass apps of
		// one name would manage the same objects.
		if i := slices.IndexFunc(refs, func(r AppRef) bool { return r.Name == app.Name && r.Project != app.Project }); i >= 0 {
			b.plan.add("Application", name, ActionRefuse, fmt.Sprintf("Windlass has an app %s in project %s: delete it, or move this one to that project", app.Name, refs[i].Project), nil)
			continue
		}
		app.Annotations = maps.Clone(app.Annotations)
		if app.Annotations == nil {
			app.Annotations = map[string]string{}
		}
		maps.Copy(app.Annotations, cfg.annotations)
		if ns := u.GetNamespace(); ns != "" && ns != b.src.Namespace {
			// Argo CD names an app outside its own namespace <ns>_<name>
			// in its tracking; the project's sourceNamespaces gate it.
			app.SourceNamespace = ns
			app.Annotations[manifest.AppAnnotationArgoApp] = ns + "_" + app.Name
		}
		if prev, dup := seen[app.Name]; dup {
			b.plan.add("Application", name, ActionRefuse, fmt.Sprintf("the Application %s is named %s too: a Windlass app name is unique", prev, app.Name), nil)
			continue
		}
		seen[app.Name] = name
		for _, d := range cfg.ignoreDifferences {
			if !slices.ContainsFunc(app.IgnoreDifferences, func(x appspec.ResourceIgnoreDifferences) bool { return jsonEqual(x, d) }) {
				app.IgnoreDifferences = append(app.IgnoreDifferences, d)
			}
		}
		old, err := b.cur.App(ctx, app.Project, app.Name)
		if err != nil {
			return fmt.Errorf("application %s: %w", name, err)
		}
		reason := strings.Join(append([]string{"project " + app.Project + ", tracking " + cfg.tracking}, notes...), "; ")
		switch {
		case old == nil:
			b.plan.add("Application", name, ActionCreate, reason, func(ctx context.Context, w Writer) error { return w.PutApp(ctx, app, false) })
		case jsonEqual(*old, app):
			b.plan.add("Application", name, ActionUnchanged, reason, nil)
		default:
			b.plan.add("Application", name, ActionUpdate, reason+"; "+differs(*old, app), func(ctx context.Context, w Writer) error { return w.PutApp(ctx, app, true) })
		}
	}
	return nil
}
