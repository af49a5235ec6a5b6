package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/url"
	"strings"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// specFlags are the flags of app create that make a spec.
type specFlags struct {
	f           *flags
	app         appspec.Application
	syncPolicy  string
	automated   appspec.Automated
	syncOptions cmdline.StringList
	labels      cmdline.StringList
	params      *paramFlags
	// names are the flags, to tell whether any was given.
	names []string
}

// sourceFlags adds the flags of a source's place: repository, path or
// chart, revision.
func (f *flags) sourceFlags(src *appspec.Source) {
	f.StringVar(&src.RepoURL, "repo", "", "the repository URL (Git, Helm or oci://)")
	f.StringVar(&src.Path, "path", "", "the path in the repository")
	f.StringVar(&src.Chart, "chart", "", "the Helm chart, for a Helm repository")
	f.StringVar(&src.TargetRevision, "revision", "", "the revision: a branch, tag or commit, or a chart version")
}

// withSpec adds the flags of a spec: its source (with the tools'
// parameters of app set), destination, sync policy and labels.
func (f *flags) withSpec() *specFlags {
	sp := &specFlags{f: f}
	before := map[string]bool{}
	f.VisitAll(func(fl *flag.Flag) { before[fl.Name] = true })
	f.sourceFlags(&sp.app.Source)
	f.StringVar(&sp.app.Source.Chart, "helm-chart", "", "the same as --chart")
	f.StringVar(&sp.app.Destination.Server, "dest-server", "", "the destination cluster's URL")
	f.StringVar(&sp.app.Destination.Name, "dest-name", "", "the destination cluster's name (instead of --dest-server)")
	f.StringVar(&sp.app.Destination.Namespace, "dest-namespace", "", "the destination namespace")
	f.StringVar(&sp.syncPolicy, "sync-policy", "", "automated, or none for manual syncs (the default)")
	f.BoolVar(&sp.automated.Prune, "auto-prune", false, "automated sync prunes (turns automated sync on)")
	f.BoolVar(&sp.automated.SelfHeal, "self-heal", false, "automated sync reverts drift (turns automated sync on)")
	f.BoolVar(&sp.automated.AllowEmpty, "allow-empty", false, "automated sync may sync no manifests at all (turns automated sync on)")
	f.Var(&sp.syncOptions, "sync-option", "a sync option, e.g. CreateNamespace=true (repeatable)")
	f.Var(&sp.labels, "label", "a label of the application, KEY=VALUE (repeatable)")
	sp.params = f.withSetParams()
	f.VisitAll(func(fl *flag.Flag) {
		if !before[fl.Name] {
			sp.names = append(sp.names, fl.Name)
		}
	})
	return sp
}

// given reports whether any flag of the spec was given.
func (sp *specFlags) given() bool {
	for _, n := range sp.names {
		if sp.f.set(n) {
			return true
		}
	}
	return false
}

// build is the spec the flags describe, for the application name in
// project.
func (sp *specFlags) build(name, project string) (appspec.Application, error) {
	a := sp.app
	a.Name, a.Project = name, project
	if a.Source.RepoURL == "" {
		return a, sp.f.usageError("--repo is required")
	}
	if err := sp.params.apply(&a.Source); err != nil {
		return a, err
	}
	on := sp.f.set("auto-prune") || sp.f.set("self-heal") || sp.f.set("allow-empty")
	switch sp.syncPolicy {
	case "automated", "auto":
		on = true
	case "none", "manual":
		if on {
			return a, sp.f.usageError("--sync-policy %s with --auto-prune, --self-heal or --allow-empty", sp.syncPolicy)
		}
	case "":
	default:
		return a, sp.f.usageError("--sync-policy %q: want automated or none", sp.syncPolicy)
	}
	if on || len(sp.syncOptions) > 0 {
		a.SyncPolicy = &appspec.SyncPolicy{SyncOptions: sp.syncOptions}
		if on {
			auto := sp.automated
			a.SyncPolicy.Automated = &auto
		}
	}
	for _, l := range sp.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return a, sp.f.usageError("--label %q: want KEY=VALUE", l)
		}
		if a.Labels == nil {
			a.Labels = map[string]string{}
		}
		a.Labels[k] = v
	}
	return a, nil
}

// createFromFlags creates the application named by pos from the flags.
func (c *cli) createFromFlags(ctx context.Context, f *flags, s *session, pos []string, q url.Values, sp *specFlags) error {
	if len(pos) != 1 {
		return f.usageError("want NAME and the spec's flags, or -f FILE")
	}
	app, err := sp.build(pos[0], cmp.Or(*f.project, appspec.DefaultProject))
	if err != nil {
		return err
	}
	body, err := json.Marshal(app)
	if err != nil {
		return err
	}
	var view workflows.AppView
	status, raw, err := s.api.post(ctx, appsPath, q, body, "application/json", &view)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { savedLine(w, view, status) })
}
