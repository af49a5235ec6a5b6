package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

var appVerbs = []verb{
	{"list", "", "list the applications", (*cli).appList},
	{"get", "NAME", "show an application and its resources", (*cli).appGet},
	{"create", "NAME | -f FILE", "create an application from flags (--repo, --path, ...) or a Windlass or Argo CD file (--upsert: or update)", (*cli).appCreate},
	{"set", "NAME", "change fields of an application's spec (--revision, --path, -p, ...; --project P moves it to P)", (*cli).appSet},
	{"unset", "NAME", "remove parameters from an application's source (-p, --values, ...)", (*cli).appUnset},
	{"patch", "NAME", "patch an application's spec (--type merge, the default, or json)", (*cli).appPatch},
	{"edit", "NAME", "edit an application's spec in $EDITOR", (*cli).appEdit},
	{"add-source", "NAME", "add a source to an application", (*cli).appAddSource},
	{"remove-source", "NAME", "remove a source of a multi-source application", (*cli).appRemoveSource},
	{"delete", "[NAME...] [-l SELECTOR]", "delete applications and their resources", (*cli).appDelete},
	{"sync", "[NAME...] [-l SELECTOR]", "sync applications and wait for the results", (*cli).appSync},
	{"wait", "[NAME...] [-l SELECTOR]", "wait until applications are synced, healthy and idle", (*cli).appWait},
	{"diff", "NAME", "show the differences between Git and the cluster (exit 1 if any, 2 on an error)", (*cli).appDiff},
	{"history", "NAME", "list the syncs of an application", (*cli).appHistory},
	{"rollback", "NAME ID", "sync again the revision and sources of a past sync", (*cli).appRollback},
	{"manifests", "NAME", "print the rendered manifests", (*cli).appManifests},
	{"resources", "NAME", "list an application's resources", (*cli).appResources},
	{"get-resource", "NAME", "print the live object of one of an application's resources", (*cli).appGetResource},
	{"patch-resource", "NAME", "patch one of an application's resources in its cluster", (*cli).appPatchResource},
	{"delete-resource", "NAME", "delete one of an application's resources in its cluster", (*cli).appDeleteResource},
	{"logs", "NAME", "print the logs of a pod, or a workload's pods, of an application (-f: follow)", (*cli).appLogs},
	{"refresh", "NAME", "compare with Git and the cluster now (--hard: bypass the caches)", (*cli).appRefresh},
	{"terminate-op", "NAME", "terminate the running operation", (*cli).appTerminate},
	{"confirm-deletion", "NAME", "approve the deletions waiting for confirmation", (*cli).appConfirmDeletion},
	{"actions", "list|run NAME", "list or run the actions of a resource (restart, scale, ...)", (*cli).appActions},
}

// appVerb parses the flags of an app verb that names an application:
// positional arguments (the name first), the project query and the
// connection.
func (f *flags) appVerb(args []string, n int) ([]string, url.Values, *session, error) {
	if f.project == nil {
		f.withProject()
	}
	pos, s, err := f.start(args, n)
	q := url.Values{}
	if err == nil && *f.project != "" {
		q.Set("project", *f.project)
	}
	return pos, q, s, err
}

// fetchApp parses the flags of an app verb with one argument, the name,
// and gets the application's sub-resource suffix ("" for the application)
// into out. It returns the answer as it came.
func (f *flags) fetchApp(ctx context.Context, args []string, suffix string, out any) ([]byte, error) {
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return nil, err
	}
	return s.api.json(ctx, http.MethodGet, appPath(pos[0])+suffix, q, nil, out)
}

func appPath(name string) string { return "/api/v1/applications/" + url.PathEscape(name) }

// appRow is one row of the application list.
type appRow struct {
	Name      string `json:"name"`
	Project   string `json:"project"`
	Sync      string `json:"sync"`
	Health    string `json:"health"`
	Revision  string `json:"revision"`
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Repo      string `json:"repo"`
	// Repos replaces Repo for a multi-source application.
	Repos  []string          `json:"repos"`
	Labels map[string]string `json:"labels"`
}

func (a appRow) repo() string {
	if a.Repo != "" {
		return a.Repo
	}
	return strings.Join(a.Repos, ",")
}

func (c *cli) appList(ctx context.Context, args []string) error {
	f := c.flags("app list", "").withOutput().withProject()
	filters := map[string]*string{}
	for _, fl := range []struct{ name, help string }{
		{"sync", "only the applications of this sync status (Synced, OutOfSync, Unknown)"},
		{"health", "only the applications of this health (Healthy, Progressing, Degraded, ...)"},
		{"repo", "only the applications that render from this repository URL"},
		{"cluster", "only the applications that deploy to this cluster"},
		{"search", "only the applications whose name contains this"},
		{"sort", "the order: -created (newest first, the default), created, name or -name"},
	} {
		filters[fl.name] = f.String(fl.name, "", fl.help)
	}
	limit := f.Int("limit", 0, "list at most this many applications (default: all)")
	selector := f.String("l", "", "only the applications whose labels match this label selector: k=v, k!=v, k in (a,b), k notin (a,b), k, !k, comma-separated")
	f.StringVar(selector, "selector", "", "the same as -l")
	showLabels := f.Bool("show-labels", false, "add a column with the labels")
	_, q, s, err := f.appVerb(args, 0)
	if err != nil {
		return err
	}
	filters["selector"] = selector
	for name, v := range filters {
		if *v != "" {
			q.Set(name, *v)
		}
	}
	raw, apps, err := listItems[appRow](ctx, s.api, appsPath, q, *limit)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		header := "NAME\tPROJECT\tSYNC\tHEALTH\tREVISION\tCLUSTER\tNAMESPACE\tREPO"
		if *showLabels {
			header += "\tLABELS"
		}
		table(w, header, apps, func(a appRow) []string {
			row := []string{a.Name, a.Project, a.Sync, a.Health, short(a.Revision), a.Cluster, a.Namespace, a.repo()}
			if *showLabels {
				row = append(row, keyValues(a.Labels))
			}
			return row
		})
	})
}

func (c *cli) appGet(ctx context.Context, args []string) error {
	f := c.flags("app get", "NAME").withOutput()
	refresh := f.Bool("refresh", false, "compare with Git and the cluster first, and show the result")
	hard := f.Bool("hard-refresh", false, "the same as --refresh, bypassing the revision and manifest caches")
	timeout := f.Duration("timeout", time.Minute, "how long --refresh waits for the comparison (exit code 6)")
	showParams := f.Bool("show-params", false, "list the tools' parameters of the sources (Helm, Kustomize, directory, plugin)")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	var view appDetail
	raw, err := s.api.json(ctx, http.MethodGet, appPath(pos[0]), q, nil, &view)
	if err == nil && (*refresh || *hard) {
		raw, err = c.refreshed(ctx, s, pos[0], q, *hard, *timeout, &view)
	}
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		printApp(w, view)
		if *showParams {
			sources := view.Spec.Sources
			if len(sources) == 0 {
				sources = []appspec.Source{view.Spec.Source}
			}
			fmt.Fprintln(w)
			paramsTable(w, sources)
		}
	})
}

// refreshed asks for a refresh of the application view and gets it again
// until it was reconciled since, for at most timeout.
func (c *cli) refreshed(ctx context.Context, s *session, name string, q url.Values, hard bool, timeout time.Duration, view *appDetail) ([]byte, error) {
	before := view.Status.ReconciledAt
	rq := cloneQuery(q)
	if hard {
		rq.Set("hard", "true")
	}
	if _, err := s.api.json(ctx, http.MethodPost, appPath(name)+"/refresh", rq, nil, nil); err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		select {
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, timedOut(timeout, "waiting for the refresh of %s (reconciled last at %s)", name, orDash(fmtTime(before)))
		case <-time.After(c.poll):
		}
		*view = appDetail{}
		raw, err := s.api.json(waitCtx, http.MethodGet, appPath(name), q, nil, view)
		if err != nil {
			if waitCtx.Err() != nil {
				continue
			}
			return nil, err
		}
		if view.Status.ReconciledAt.After(before) {
			return raw, nil
		}
	}
}

// shortRefs writes "<project>/<name>" refs as dependsOn does: the name
// alone in project.
func shortRefs(project string, refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = strings.TrimPrefix(r, project+"/")
	}
	return out
}

// appDetail is GET /api/v1/applications/{name}'s answer: the view and
// the apps that depend on the app.
type appDetail struct {
	workflows.AppView
	Dependents []string `json:"dependents,omitempty"`
}

func printApp(w io.Writer, v appDetail) {
	spec, st := v.Spec, v.Status
	policy := "Manual"
	if spec.IsAutomated() {
		auto := spec.SyncPolicy.Automated
		var opts []string
		for _, o := range []struct {
			on   bool
			name string
		}{{auto.Prune, "Prune"}, {auto.SelfHeal, "SelfHeal"}, {auto.AllowEmpty, "AllowEmpty"}} {
			if o.on {
				opts = append(opts, o.name)
			}
		}
		policy = strings.TrimSuffix("Automated ("+strings.Join(opts, ", ")+")", " ()")
	}
	var syncOpts []string
	if spec.SyncPolicy != nil {
		syncOpts = spec.SyncPolicy.SyncOptions
	}
	pairs := []string{"Name", spec.Name, "Project", spec.Project,
		"Labels", keyValues(spec.Labels), "Annotations", keyValues(spec.Annotations),
		"Server", spec.Destination.Server, "Namespace", spec.Destination.Namespace}
	sources := spec.Sources
	if len(sources) == 0 {
		sources = []appspec.Source{spec.Source}
	}
	for i, src := range sources {
		label := "Source"
		if len(sources) > 1 {
			label = "Source " + strconv.Itoa(i+1)
		}
		pairs = append(pairs, label, sourceLine(src))
	}
	pairs = append(pairs,
		"Depends On", strings.Join(spec.DependsOn, ", "),
		"Dependents", strings.Join(shortRefs(spec.Project, v.Dependents), ", "),
		"Sync Policy", policy,
		"Sync Options", strings.Join(syncOpts, ","),
		"Sync Status", strings.TrimSpace(string(st.Sync)+" to "+revision(st.Revision, st.SHA)),
		"Health Status", string(st.Health),
		"Reconciled", fmtTime(st.ReconciledAt),
		"Reconcile", skippedLine(st.ReconcileSkipped),
		"Message", st.Message)
	if op := st.Operation; op != nil {
		pairs = append(pairs, "Operation", op.SyncID+" "+operationLine(op))
	}
	if n := len(st.AwaitingDeletionApproval); n > 0 {
		pairs = append(pairs, "Deletion", fmt.Sprintf("%s await approval (windlass app confirm-deletion %s)", plural(n, "resource"), spec.Name))
	}
	details(w, pairs...)
	if len(st.Conditions) > 0 {
		fmt.Fprintln(w)
		table(w, "CONDITION\tMESSAGE", st.Conditions, func(c appspec.Condition) []string { return []string{c.Type, c.Message} })
	}
	if len(st.Resources) > 0 {
		fmt.Fprintln(w)
		resourceTable(w, st.Resources)
	}
}

func sourceLine(s appspec.Source) string {
	parts := []string{s.RepoURL}
	for _, p := range []struct{ k, v string }{{"path", s.Path}, {"chart", s.Chart}, {"revision", s.TargetRevision}, {"ref", s.Ref}} {
		if p.v != "" {
			parts = append(parts, p.k+" "+p.v)
		}
	}
	return strings.Join(parts, ", ")
}

func resourceTable(w io.Writer, res []appspec.ResourceStatus) {
	table(w, "GROUP\tKIND\tNAMESPACE\tNAME\tSTATUS\tHEALTH\tMESSAGE", res, func(r appspec.ResourceStatus) []string {
		status := string(r.Status)
		if r.RequiresPruning {
			status += " (requires pruning)"
		}
		msg := strings.TrimSpace(r.HealthMessage + " " + r.Message)
		return []string{r.Group, r.Kind, r.Namespace, r.Name, status, string(r.Health), msg}
	})
}

func (c *cli) appCreate(ctx context.Context, args []string) error {
	f := c.flags("app create", "NAME --repo URL ... | -f FILE").withOutput().withProject()
	file := f.String("f", "", "the application file: Windlass JSON or YAML, or an Argo CD Application, "+
		"several YAML documents created in order (- for stdin)")
	upsert := f.Bool("upsert", false, "update the application if it exists")
	spec := f.withSpec()
	pos, s, err := f.start(args, anyArgs)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *upsert {
		q.Set("upsert", "true")
	}
	if *file == "" {
		return c.createFromFlags(ctx, f, s, pos, q, spec)
	}
	if len(pos) > 0 || spec.given() || f.set("project") {
		return f.usageError("-f takes the application from the file: no name or spec flags with it")
	}
	body, ct, err := c.bodyOf(*file)
	if err != nil {
		return err
	}
	if ct == contentYAML {
		if docs := appspec.Documents(body); len(docs) > 1 {
			return c.createEach(ctx, f, s, docs, q)
		}
	}
	var view workflows.AppView
	status, raw, err := s.api.post(ctx, appsPath, q, body, ct, &view)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { savedLine(w, view, status) })
}

// appsPath is the API's collection of applications.
const appsPath = "/api/v1/applications"

// savedLine reports an application that POST answered with status: 201
// for created, 200 for updated (--upsert).
func savedLine(w io.Writer, view workflows.AppView, status int) {
	what := "created"
	if status == http.StatusOK {
		what = "updated"
	}
	fmt.Fprintf(w, "application %s/%s %s\n", view.Spec.Project, view.Spec.Name, what)
}

// createEach creates the application of each YAML document in order, as
// kubectl apply does with a file of several: a line for each (failures on
// stderr), and on to the next after a failure. -o json|yaml prints the
// list of the saved applications at the end.
func (c *cli) createEach(ctx context.Context, f *flags, s *session, docs [][]byte, q url.Values) error {
	table := *f.output == ""
	saved := []json.RawMessage{}
	failed := 0
	for i, doc := range docs {
		var view workflows.AppView
		status, raw, err := s.api.post(ctx, appsPath, q, doc, contentYAML, &view)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			failed++
			fmt.Fprintf(c.stderr, "%s failed: %s\n", docSubject(doc, i), cmdline.Message(err))
			continue
		}
		saved = append(saved, raw)
		if table {
			savedLine(c.stdout, view, status)
		}
	}
	if !table {
		raw, err := json.Marshal(saved)
		if err != nil {
			return err
		}
		if err := f.print(raw, nil); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d applications failed", failed, len(docs))
	}
	return nil
}

// docSubject names the i-th document (from 0) in a message: "application
// <project>/<name>" as far as it can read them from Windlass's or Argo
// CD's fields, else "document <n>".
func docSubject(doc []byte, i int) string {
	var d struct {
		Name     string `json:"name"`
		Project  string `json:"project"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Project string `json:"project"`
		} `json:"spec"`
	}
	_ = yaml.Unmarshal(doc, &d)
	name := cmp.Or(d.Metadata.Name, d.Name)
	if name == "" {
		return fmt.Sprintf("document %d", i+1)
	}
	return "application " + cmp.Or(d.Spec.Project, d.Project, appspec.DefaultProject) + "/" + name
}

func (c *cli) appSet(ctx context.Context, args []string) error {
	f := c.flags("app set", "NAME").withOutput()
	str := map[string]*string{}
	for _, fl := range []struct{ name, usage string }{
		{"revision", "the source's target revision"},
		{"path", "the source's path in the repository"},
		{"repo", "the source's repository URL"},
		{"chart", "the source's Helm chart"},
		{"dest-server", "the destination cluster's URL"},
		{"dest-namespace", "the destination namespace"},
		{"sync-policy", "automated, or none for manual syncs"},
	} {
		str[fl.name] = f.String(fl.name, "", fl.usage)
	}
	prune := f.Bool("auto-prune", false, "automated sync prunes (turns automated sync on)")
	selfHeal := f.Bool("self-heal", false, "automated sync reverts drift (turns automated sync on)")
	var syncOptions cmdline.StringList
	f.Var(&syncOptions, "sync-option", "a sync option, e.g. CreateNamespace=true (repeatable; replaces the list)")
	refresh := f.Int("refresh-seconds", 0, "the refresh interval of this application")
	allowEmpty := f.Bool("allow-empty", false, "automated sync may sync no manifests at all (turns automated sync on)")
	position := f.Int("source-position", 0, "the source to change, from 1, of a multi-source application")
	dependsOn := f.String("depends-on", "", "the apps each sync waits for, comma-separated: NAME or PROJECT/NAME (replaces the list; \"\" clears it)")
	params := f.withSetParams()
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	patch := map[string]any{}
	source := map[string]any{}
	for flagName, field := range map[string]string{"revision": "targetRevision", "path": "path", "repo": "repoURL", "chart": "chart"} {
		if f.set(flagName) {
			source[field] = *str[flagName]
		}
	}
	dest := map[string]any{}
	for flagName, field := range map[string]string{"dest-server": "server", "dest-namespace": "namespace"} {
		if f.set(flagName) {
			dest[field] = *str[flagName]
		}
	}
	policy := map[string]any{}
	automated := map[string]any{}
	switch p := *str["sync-policy"]; {
	case !f.set("sync-policy"):
	case p == "automated" || p == "auto":
		policy["automated"] = automated
	case p == "none" || p == "manual":
		if f.set("auto-prune") || f.set("self-heal") || f.set("allow-empty") {
			return f.usageError("--sync-policy %s with --auto-prune, --self-heal or --allow-empty", p)
		}
		policy["automated"] = nil
	default:
		return f.usageError("--sync-policy %q: want automated or none", p)
	}
	if f.set("auto-prune") {
		automated["prune"] = *prune
		policy["automated"] = automated
	}
	if f.set("self-heal") {
		automated["selfHeal"] = *selfHeal
		policy["automated"] = automated
	}
	if f.set("allow-empty") {
		automated["allowEmpty"] = *allowEmpty
		policy["automated"] = automated
	}
	if f.set("sync-option") {
		policy["syncOptions"] = []string(syncOptions)
	}
	if f.set("refresh-seconds") {
		patch["refreshSeconds"] = *refresh
	}
	if f.set("depends-on") {
		var deps []string
		for d := range strings.SplitSeq(*dependsOn, ",") {
			if d = strings.TrimSpace(d); d != "" {
				deps = append(deps, d)
			}
		}
		patch["dependsOn"] = deps // nil clears the list
	}
	if len(dest) > 0 {
		patch["destination"] = dest
	}
	if len(policy) > 0 {
		patch["syncPolicy"] = policy
	}
	if len(source) > 0 || len(params.edits) > 0 {
		if err := c.patchSource(ctx, s, pos[0], q, *position, source, params, patch); err != nil {
			return err
		}
	} else if f.set("source-position") {
		return f.usageError("--source-position without a source field to set")
	}
	if f.set("project") {
		if err := c.setProject(ctx, f, s, pos, q, patch); err != nil {
			return err
		}
	}
	if len(patch) == 0 {
		return f.usageError("nothing to set")
	}
	return c.patchApp(ctx, f, s, target{name: pos[0], q: q}, patch)
}

// setProject makes app set's --project P move the app to P, as in Argo CD.
// The app is NAME in the project that holds it, or PROJECT/NAME when
// several do; pos[0] and q are set to name it there. An app already in P
// is only selected, so --project still names the app's project.
func (c *cli) setProject(ctx context.Context, f *flags, s *session, pos []string, q url.Values, patch map[string]any) error {
	to := *f.project
	from, name, ok := strings.Cut(pos[0], "/")
	if !ok {
		name = pos[0]
		_, items, err := listItems[struct{ Name, Project string }](ctx, s.api, appsPath, url.Values{"search": {name}}, 0)
		if err != nil {
			return err
		}
		var projects []string
		for _, it := range items {
			if it.Name == name {
				projects = append(projects, it.Project)
			}
		}
		switch {
		case slices.Contains(projects, to):
			from = to
		case len(projects) == 0:
			return fmt.Errorf("application %s not found", name)
		case len(projects) > 1:
			return f.usageError("application %s is in projects %s: name it PROJECT/%s", name, strings.Join(projects, ", "), name)
		default:
			from = projects[0]
		}
	}
	pos[0] = name
	q.Set("project", from)
	if from != to {
		patch["project"] = to
	}
	return nil
}

// patchSource adds the source fields and the tools' parameters to the
// merge patch: to "source", or, for the source at position (from 1) of a
// multi-source application, to the whole "sources" list (a merge patch
// replaces lists). Parameters are kept in lists, so they need the
// current source: the patch then holds its changes only.
func (c *cli) patchSource(ctx context.Context, s *session, name string, q url.Values, position int, fields map[string]any, params *paramFlags, patch map[string]any) error {
	if position == 0 && len(params.edits) == 0 {
		patch["source"] = fields
		return nil
	}
	var view workflows.AppView
	raw, err := s.api.json(ctx, http.MethodGet, appPath(name), q, nil, &view)
	if err != nil {
		return err
	}
	multi := len(view.Spec.Sources) > 0
	sources := view.Spec.Sources
	if !multi {
		sources = []appspec.Source{view.Spec.Source}
	}
	switch {
	case position == 0 && multi:
		return fmt.Errorf("%w: %s: %s has %d sources: give --source-position", cmdline.ErrUsage, params.f.name, name, len(sources))
	case position < 0 || position > len(sources):
		return fmt.Errorf("%w: %s: --source-position %d: %s has %d sources", cmdline.ErrUsage, params.f.name, position, name, len(sources))
	}
	i := max(position, 1) - 1
	changes, err := editSource(sources[i], fields, params)
	if err != nil {
		return err
	}
	if !multi {
		patch["source"] = changes
		return nil
	}
	// The list as the server sent it, with the changes merged into the
	// one source: fields this client does not know are kept.
	var asSent struct {
		Spec struct {
			Sources []json.RawMessage `json:"sources"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &asSent); err != nil || len(asSent.Spec.Sources) != len(sources) {
		return fmt.Errorf("GET %s: unexpected answer: %v", appPath(name), err)
	}
	list := make([]map[string]any, len(sources))
	for j, src := range asSent.Spec.Sources {
		if j == i {
			if src, err = jsonpatch.MergePatch(src, changes); err != nil {
				return err
			}
		}
		if err := json.Unmarshal(src, &list[j]); err != nil {
			return err
		}
	}
	patch["sources"] = list
	return nil
}

// editSource sets the fields and runs the edits of params on src, and
// returns the changes as a merge patch of the source.
func editSource(src appspec.Source, fields map[string]any, params *paramFlags) (json.RawMessage, error) {
	before, err := json.Marshal(src)
	if err != nil {
		return nil, err
	}
	var edited appspec.Source
	if err := json.Unmarshal(before, &edited); err != nil { // a deep copy
		return nil, err
	}
	b, err := json.Marshal(fields)
	if err == nil {
		err = json.Unmarshal(b, &edited)
	}
	if err != nil {
		return nil, err
	}
	if err := params.apply(&edited); err != nil {
		return nil, err
	}
	after, err := json.Marshal(edited)
	if err != nil {
		return nil, err
	}
	return jsonpatch.CreateMergePatch(before, after)
}

func (c *cli) appDelete(ctx context.Context, args []string) error {
	f := c.flags("app delete", "[NAME...] [-l SELECTOR]").withOutput()
	cascade := f.String("cascade", "", "foreground (default), background, or orphan to leave the resources in place")
	yes := f.Bool("y", false, "do not ask for confirmation")
	f.BoolVar(yes, "yes", false, "do not ask for confirmation")
	selector := f.withSelector()
	pos, q, s, err := f.appVerb(args, anyArgs)
	if err != nil {
		return err
	}
	switch *cascade {
	case "", "foreground", "background", "orphan":
	default:
		return f.usageError("--cascade %q: want foreground, background or orphan", *cascade)
	}
	targets, err := c.targets(ctx, f, s, q, pos, *selector)
	if err != nil {
		return err
	}
	if !*yes {
		what := "and all its resources"
		if *cascade == "orphan" {
			what = "and leave its resources in place"
		}
		subject := "application " + targets[0].name
		if len(targets) > 1 {
			names := make([]string, len(targets))
			for i, t := range targets {
				names[i] = t.name
			}
			subject = fmt.Sprintf("%d applications (%s)", len(targets), strings.Join(names, ", "))
			what = strings.NewReplacer("its", "their").Replace(what)
		}
		answer, err := c.prompt(fmt.Sprintf("Delete %s %s? [y/N] ", subject, what))
		if err != nil || !strings.EqualFold(strings.TrimSpace(answer), "y") && !strings.EqualFold(strings.TrimSpace(answer), "yes") {
			return fmt.Errorf("%s not deleted: not confirmed (-y skips the question)", subject)
		}
	}
	return c.eachTarget(targets, func(t target) error {
		if *cascade != "" {
			t.q.Set("cascade", *cascade)
		}
		return c.deleteApp(ctx, f, s, t)
	})
}

// deleteApp deletes one application and prints what became of its
// resources.
func (c *cli) deleteApp(ctx context.Context, f *flags, s *session, t target) error {
	name := t.name
	status, raw, err := s.api.send(ctx, call{method: http.MethodDelete, path: appPath(name), query: t.q, long: true})
	if err != nil {
		return err
	}
	var res workflows.DeleteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("delete: unexpected answer: %w", err)
	}
	return f.print(raw, func(w io.Writer) {
		if status == http.StatusAccepted || len(res.AwaitingApproval) > 0 {
			fmt.Fprintf(w, "application %s: the deletion waits for the approval of %s marked Delete=confirm (windlass app confirm-deletion %s)\n",
				name, plural(len(res.AwaitingApproval), "resource"), name)
			keyTable(w, res.AwaitingApproval)
			return
		}
		fmt.Fprintf(w, "application %s deleted\n", name)
		if len(res.Resources) > 0 {
			table(w, "GROUP\tKIND\tNAMESPACE\tNAME\tACTION\tMESSAGE", res.Resources, func(r cluster.ResourceResult) []string {
				return []string{r.Group, r.Kind, r.Namespace, r.Name, string(r.Action), r.Message}
			})
		}
	})
}

func keyTable(w io.Writer, keys []appspec.ResourceKey) {
	table(w, "GROUP\tKIND\tNAMESPACE\tNAME", keys, func(k appspec.ResourceKey) []string {
		return []string{k.Group, k.Kind, k.Namespace, k.Name}
	})
}

// operationFlags are the flags of sync and rollback.
type operationFlags struct {
	async   *bool
	timeout *time.Duration
}

func (f *flags) withOperation() operationFlags {
	return operationFlags{
		async:   f.Bool("async", false, "do not wait for the result: print the sync's ID"),
		timeout: f.Duration("timeout", 0, "stop waiting after this long (exit code 6); the operation goes on (default: no limit)"),
	}
}

func (c *cli) appSync(ctx context.Context, args []string) error {
	f := c.flags("app sync", "[NAME...] [-l SELECTOR]").withOutput()
	var req workflows.SyncRequest
	f.BoolVar(&req.Prune, "prune", false, "delete the resources no longer in Git")
	f.BoolVar(&req.DryRun, "dry-run", false, "preview the sync without changing the cluster")
	f.StringVar(&req.Revision, "revision", "", "sync this revision instead of the spec's")
	f.StringVar(&req.Strategy, "strategy", "", "hook (default) or apply (no hooks)")
	var resources, syncOptions cmdline.StringList
	f.Var(&resources, "resource", "sync only this resource, GROUP:KIND:NAME or GROUP:KIND:NAMESPACE/NAME (repeatable)")
	f.Var(&syncOptions, "sync-option", "a sync option for this sync, e.g. ServerSideApply=true (repeatable)")
	selector := f.withSelector()
	op := f.withOperation()
	pos, q, s, err := f.appVerb(args, anyArgs)
	if err != nil {
		return err
	}
	for _, r := range resources {
		k, err := parseResource(r)
		if err != nil {
			return f.usageError("%v", err)
		}
		req.Resources = append(req.Resources, k)
	}
	req.SyncOptions = syncOptions
	targets, err := c.targets(ctx, f, s, q, pos, *selector)
	if err != nil {
		return err
	}
	n := 0
	return c.eachTarget(targets, func(t target) error {
		if n++; n > 1 && *f.output == "" && !*op.async {
			fmt.Fprintln(c.stdout) // a blank line between the results
		}
		return c.operate(ctx, f, s, t.name, "sync", t.q, req, op)
	})
}

// parseResource reads Argo CD's GROUP:KIND:NAME, where NAME may be
// NAMESPACE/NAME and GROUP is empty for the core group.
func parseResource(s string) (appspec.ResourceKey, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return appspec.ResourceKey{}, fmt.Errorf("--resource %q: want GROUP:KIND:NAME or GROUP:KIND:NAMESPACE/NAME", s)
	}
	k := appspec.ResourceKey{Group: parts[0], Kind: parts[1], Name: parts[2]}
	if ns, name, ok := strings.Cut(parts[2], "/"); ok {
		k.Namespace, k.Name = ns, name
	}
	return k, nil
}

func (c *cli) appRollback(ctx context.Context, args []string) error {
	f := c.flags("app rollback", "NAME ID").withOutput().withProject()
	var req workflows.RollbackRequest
	f.BoolVar(&req.Prune, "prune", false, "delete the resources not in the past sync")
	f.BoolVar(&req.DryRun, "dry-run", false, "preview the rollback without changing the cluster")
	f.BoolVar(&req.Force, "force", false, "roll back although automated sync is on")
	op := f.withOperation()
	pos, q, s, err := f.appVerb(args, 2)
	if err != nil {
		return err
	}
	req.ID = pos[1]
	if n, err := strconv.Atoi(pos[1]); err == nil {
		proj := *f.project
		if proj == "" {
			proj = appspec.DefaultProject
		}
		req.ID = workflows.SyncWorkflowID(proj, pos[0], n)
	}
	return c.operate(ctx, f, s, pos[0], "rollback", q, req, op)
}

// appDiff exits as `argocd app diff` does, for CI gates: 0 when Git and
// the cluster agree, exitDiffFound when they differ, exitDiffError on any
// error.
func (c *cli) appDiff(ctx context.Context, args []string) error {
	differ, err := c.diff(ctx, args)
	switch {
	case err != nil:
		return cmdline.WithCode(exitDiffError, err)
	case differ:
		return cmdline.WithCode(exitDiffFound, cmdline.ErrReported)
	}
	return nil
}

// diff prints the app's differences and reports whether there are any.
func (c *cli) diff(ctx context.Context, args []string) (bool, error) {
	f := c.flags("app diff", "NAME").withOutput()
	var diff struct {
		Resources []struct {
			appspec.ResourceKey
			Status string `json:"status"`
			Diff   string `json:"diff"`
		} `json:"resources"`
	}
	raw, err := f.fetchApp(ctx, args, "/diff", &diff)
	if err != nil {
		return false, err
	}
	differ := false
	for _, r := range diff.Resources {
		differ = differ || r.Diff != ""
	}
	return differ, f.print(raw, func(w io.Writer) {
		for _, r := range diff.Resources {
			if r.Diff == "" {
				continue
			}
			fmt.Fprintf(w, "===== %s/%s %s/%s ======\n", r.Group, r.Kind, r.Namespace, r.Name)
			fmt.Fprint(w, r.Diff)
			if !strings.HasSuffix(r.Diff, "\n") {
				fmt.Fprintln(w)
			}
		}
	})
}

// syncRecord is one entry of the full sync history.
type syncRecord struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	Source      string    `json:"source"`
	Revision    string    `json:"revision"`
	SHA         string    `json:"sha"`
	TemporalURL string    `json:"temporalURL"`
}

func (c *cli) appHistory(ctx context.Context, args []string) error {
	f := c.flags("app history", "NAME").withOutput()
	all := f.Bool("all", false, "list every sync ever run, retained by Temporal or archived, not only the recent ones")
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if *all {
		raw, syncs, err := listItems[syncRecord](ctx, s.api, appPath(pos[0])+"/syncs", q, 0)
		if err != nil {
			return err
		}
		return f.print(raw, func(w io.Writer) {
			table(w, "ID\tSTATUS\tREVISION\tSTARTED\tFINISHED\tSOURCE\tTEMPORAL", syncs, func(r syncRecord) []string {
				return []string{r.ID, r.Status, revision(r.Revision, r.SHA), fmtTime(r.Started), fmtTime(r.Finished), r.Source, r.TemporalURL}
			})
		})
	}
	var h workflows.HistoryView
	raw, err := s.api.json(ctx, http.MethodGet, appPath(pos[0])+"/history", q, nil, &h)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		table(w, "ID\tPHASE\tREVISION\tINITIATOR\tSTARTED\tFINISHED\tMESSAGE", h.Recent, func(r workflows.SyncSummary) []string {
			return []string{r.ID, r.Phase, revision(r.Revision, r.SHA), r.Initiator, fmtTime(r.StartedAt), fmtTime(r.FinishedAt), r.Message}
		})
	})
}

func (c *cli) appManifests(ctx context.Context, args []string) error {
	f := c.flags("app manifests", "NAME").withOutput()
	var m struct {
		Manifests []json.RawMessage `json:"manifests"`
	}
	raw, err := f.fetchApp(ctx, args, "/manifests", &m)
	if err != nil {
		return err
	}
	var docs []string
	for _, obj := range m.Manifests {
		y, err := yaml.JSONToYAML(obj)
		if err != nil {
			return fmt.Errorf("manifests: %w", err)
		}
		docs = append(docs, string(y))
	}
	return f.print(raw, func(w io.Writer) {
		for i, d := range docs {
			if i > 0 {
				fmt.Fprintln(w, "---")
			}
			fmt.Fprint(w, d)
		}
	})
}

func (c *cli) appResources(ctx context.Context, args []string) error {
	f := c.flags("app resources", "NAME").withOutput()
	var res []appspec.ResourceStatus
	raw, err := f.fetchApp(ctx, args, "/resources", &res)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { resourceTable(w, res) })
}

// appAction posts to an action of an application that answers 202.
func (c *cli) appAction(ctx context.Context, args []string, verbName, action, done string, extra func(f *flags) func(url.Values)) error {
	f := c.flags("app "+verbName, "NAME")
	var setQuery func(url.Values)
	if extra != nil {
		setQuery = extra(f)
	}
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	if setQuery != nil {
		setQuery(q)
	}
	if _, err := s.api.json(ctx, http.MethodPost, appPath(pos[0])+"/"+action, q, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "application %s: %s\n", pos[0], done)
	return nil
}

func (c *cli) appRefresh(ctx context.Context, args []string) error {
	return c.appAction(ctx, args, "refresh", "refresh", "refresh requested", func(f *flags) func(url.Values) {
		hard := f.Bool("hard", false, "bypass the revision and manifest caches")
		return func(q url.Values) {
			if *hard {
				q.Set("hard", "true")
			}
		}
	})
}

func (c *cli) appTerminate(ctx context.Context, args []string) error {
	return c.appAction(ctx, args, "terminate-op", "terminate", "operation terminating", nil)
}

func (c *cli) appConfirmDeletion(ctx context.Context, args []string) error {
	f := c.flags("app confirm-deletion", "NAME").withOutput()
	pos, q, s, err := f.appVerb(args, 1)
	if err != nil {
		return err
	}
	var approved struct {
		Resources []appspec.ResourceKey `json:"resources"`
	}
	raw, err := s.api.json(ctx, http.MethodPost, appPath(pos[0])+"/confirm-deletion", q, nil, &approved)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		if len(approved.Resources) == 0 {
			fmt.Fprintf(w, "application %s: no deletion was waiting for approval\n", pos[0])
			return
		}
		fmt.Fprintf(w, "application %s: deletion approved for %s\n", pos[0], plural(len(approved.Resources), "resource"))
		keyTable(w, approved.Resources)
	})
}

// keyValues shows labels or annotations as k=v, sorted, comma-separated.
func keyValues(kv map[string]string) string {
	out := make([]string, 0, len(kv))
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		out = append(out, k+"="+kv[k])
	}
	return strings.Join(out, ",")
}

func skippedLine(skipped bool) string {
	if !skipped {
		return ""
	}
	return "skipped: the " + appspec.AnnotationSkipReconcile + " annotation pauses it"
}
