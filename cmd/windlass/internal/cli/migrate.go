package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/migrate"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
)

var migrateVerbs = []verb{
	{"argocd", "", "take over a live Argo CD: its apps, projects, repositories, clusters and settings", (*cli).migrateArgoCD},
}

func init() { groups["migrate"] = migrateVerbs }

const migrateHelp = `Reads Argo CD's Applications, AppProjects, argocd-cm, argocd-rbac-cm,
argocd-notifications-cm, argocd-notifications-secret and repository,
repo-creds and cluster Secrets from a cluster, and creates their Windlass
equivalents through the API. It prints a plan, one row per object:
create, update, unchanged, skip, refuse (with why), or failed (the API's
error). Argo CD's objects are only read, never written.

Settings Windlass reads from files are written under --out: auth-config.yaml
(the RBAC policy and local accounts, for the API's --auth-config) and
resource-customizations/ (Lua health checks, for the workers'
--resource-customizations). repo-creds templates are copied into each
repository under their prefix. The notifications configuration and the
keys of its secret go to the API's notifications settings; a key Windlass
cannot take (an unsupported service, a literal credential) is refused.
Apps get the annotation windlass.dev/argocd-tracking from argocd-cm's
resourceTrackingMethod.

It refuses to run while Argo CD's application controller has replicas
(both would sync the same objects), unless --force. Run --dry-run first: it
writes nothing, neither to Windlass nor to --out.

Exit code: 1 when any row is refused or failed, after the other rows are
migrated; 0 otherwise.

`

func (c *cli) migrateArgoCD(ctx context.Context, args []string) error {
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }) {
		fmt.Fprint(c.stdout, migrateHelp)
	}
	f := c.flags("migrate argocd", "").withOutput()
	kubeconfig := f.String("kubeconfig", "", "kubeconfig of the cluster Argo CD runs in (default $KUBECONFIG, else ~/.kube/config)")
	kubeContext := f.String("context", "", "the kubeconfig context (default: its current context)")
	namespace := f.String("namespace", "argocd", "Argo CD's namespace")
	out := f.String("out", "windlass-from-argocd", "directory for the settings Windlass reads from files")
	dryRun := f.Bool("dry-run", false, "print the plan and write nothing")
	force := f.Bool("force", false, "run although Argo CD's application controller has replicas")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *kubeContext}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	src, err := migrate.Read(ctx, kube, dyn, *namespace)
	if err != nil {
		return err
	}
	if running := src.Running(); len(running) > 0 && !*force && !*dryRun {
		var names []string
		for _, w := range running {
			names = append(names, fmt.Sprintf("%s %s/%s (replicas: %d)", w.Kind, w.Namespace, w.Name, w.Replicas))
		}
		w := running[0]
		return fmt.Errorf("the application controller of Argo CD runs: %s; scale it to 0 first (kubectl -n %s scale %s %s --replicas 0), or pass --force",
			strings.Join(names, ", "), w.Namespace, strings.ToLower(w.Kind), w.Name)
	}
	target := apiTarget{s.api}
	plan, err := migrate.Build(ctx, src, target, migrate.Options{OutDir: *out, Force: *force})
	if err != nil {
		return err
	}
	if !*dryRun {
		plan.Apply(ctx, target)
	}
	raw, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	if err := f.print(raw, func(w io.Writer) {
		if *dryRun {
			fmt.Fprintln(w, "dry run: nothing is written")
		}
		plan.Print(w)
	}); err != nil {
		return err
	}
	if n := plan.Refused(); n > 0 {
		if *dryRun {
			return fmt.Errorf("%d objects would be refused", n)
		}
		return cmdline.WithCode(cmdline.ExitError, fmt.Errorf("%d objects refused or failed; the others are migrated", n))
	}
	return nil
}

// apiTarget reads and writes Windlass's objects through the REST API.
type apiTarget struct{ api *apiClient }

var (
	_ migrate.Current = apiTarget{}
	_ migrate.Writer  = apiTarget{}
)

// notFound makes a 404 a nil object.
func notFound(err error) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil
	}
	return err
}

func (t apiTarget) Project(ctx context.Context, name string) (*appspec.Project, error) {
	var p appspec.Project
	if _, err := t.api.json(ctx, http.MethodGet, projPath(name), nil, nil, &p); err != nil {
		return nil, notFound(err)
	}
	return &p, nil
}

func (t apiTarget) App(ctx context.Context, project, name string) (*appspec.Application, error) {
	var view struct {
		Spec appspec.Application `json:"spec"`
	}
	q := url.Values{"project": {project}}
	if _, err := t.api.json(ctx, http.MethodGet, "/api/v1/applications/"+url.PathEscape(name), q, nil, &view); err != nil {
		return nil, notFound(err)
	}
	return &view.Spec, nil
}

func (t apiTarget) Apps(ctx context.Context) ([]migrate.AppRef, error) {
	_, items, err := listItems[migrate.AppRef](ctx, t.api, "/api/v1/applications", nil, 0)
	return items, err
}

func (t apiTarget) Repos(ctx context.Context) ([]settings.RepositoryView, error) {
	_, items, err := listItems[settings.RepositoryView](ctx, t.api, "/api/v1/repositories", nil, 0)
	return items, err
}

func (t apiTarget) RepoCreds(ctx context.Context) ([]settings.RepositoryView, error) {
	_, items, err := listItems[settings.RepositoryView](ctx, t.api, "/api/v1/repocreds", nil, 0)
	return items, err
}

func (t apiTarget) Clusters(ctx context.Context) ([]settings.ClusterView, error) {
	_, items, err := listItems[settings.ClusterView](ctx, t.api, "/api/v1/clusters", nil, 0)
	return items, err
}

func (t apiTarget) PutProject(ctx context.Context, p appspec.Project, exists bool) error {
	var err error
	if exists {
		_, err = t.api.json(ctx, http.MethodPut, projPath(p.Name), nil, p, nil)
	} else {
		_, err = t.api.json(ctx, http.MethodPost, "/api/v1/projects", nil, p, nil)
	}
	return err
}

func (t apiTarget) PutRepo(ctx context.Context, r settings.Repository, exists bool) error {
	return t.upsert(ctx, "/api/v1/repositories", r, exists)
}

// upsert posts r to path, replacing what is there when it exists.
func (t apiTarget) upsert(ctx context.Context, path string, r settings.Repository, exists bool) error {
	var q url.Values
	if exists {
		q = url.Values{"upsert": {"true"}}
	}
	_, err := t.api.json(ctx, http.MethodPost, path, q, r, nil)
	return err
}

func (t apiTarget) PutRepoCreds(ctx context.Context, r settings.Repository, exists bool) error {
	return t.upsert(ctx, "/api/v1/repocreds", r, exists)
}

func (t apiTarget) PutCluster(ctx context.Context, cl settings.Cluster, _ bool) error {
	_, err := t.api.json(ctx, http.MethodPost, "/api/v1/clusters", nil, cl, nil)
	return err
}

func (t apiTarget) PutApp(ctx context.Context, a appspec.Application, exists bool) error {
	var err error
	if exists {
		_, err = t.api.json(ctx, http.MethodPut, "/api/v1/applications/"+url.PathEscape(a.Name), url.Values{"project": {a.Project}}, a, nil)
	} else {
		_, err = t.api.json(ctx, http.MethodPost, "/api/v1/applications", nil, a, nil)
	}
	return err
}

func (t apiTarget) Notifications(ctx context.Context) (string, []string, error) {
	var cfg struct {
		Config string `json:"config"`
	}
	if _, err := t.api.json(ctx, http.MethodGet, "/api/v1/settings/notifications", nil, nil, &cfg); err != nil {
		return "", nil, err
	}
	var sec struct {
		Keys []string `json:"keys"`
	}
	if _, err := t.api.json(ctx, http.MethodGet, "/api/v1/settings/notifications/secret", nil, nil, &sec); err != nil {
		return "", nil, err
	}
	return cfg.Config, sec.Keys, nil
}

func (t apiTarget) PutNotifications(ctx context.Context, config string) error {
	_, err := t.api.json(ctx, http.MethodPut, "/api/v1/settings/notifications", nil, map[string]string{"config": config}, nil)
	return err
}

func (t apiTarget) PutNotificationsSecret(ctx context.Context, data map[string][]byte) error {
	body := map[string]map[string]string{"data": {}}
	for k, v := range data {
		body["data"][k] = string(v)
	}
	_, err := t.api.json(ctx, http.MethodPatch, "/api/v1/settings/notifications/secret", nil, body, nil)
	return err
}
