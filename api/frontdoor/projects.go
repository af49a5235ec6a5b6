package frontdoor

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// AppProjects is the project resource the front door watches.
var AppProjects = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}

const msgNoProjects = "cannot list AppProject resources; watching Applications only"

// projectOf converts an AppProject resource to the project it declares,
// which carries key in DeclaredBy, as specOf does for applications.
func projectOf(obj map[string]any, key string) (appspec.Project, error) {
	p, err := appspec.ParseProject(argoDocument(obj, "AppProject"))
	p.Annotations = declared(p.Annotations, key)
	return p, err
}

// renderProjectStatus is the status of an AppProject resource: its
// conditions only (Argo CD's holds role tokens, which Windlass keeps
// elsewhere).
func renderProjectStatus(conds []condition, prev map[string]any, now time.Time) map[string]any {
	st := renderStatus(nil, conds, prev, now)
	out := map[string]any{}
	if c, ok := st["conditions"]; ok {
		out["conditions"] = c
	}
	return out
}

// reconcileProject brings the project of AppProject it, and its status,
// up to date. Deleting the resource deletes the project once no app uses
// it (removeGoneProject); there is no finalizer.
func (c *Controller) reconcileProject(ctx context.Context, it item, u *unstructured.Unstructured) error {
	if u.GetDeletionTimestamp() != nil {
		return nil
	}
	prev, _ := u.Object["status"].(map[string]any)
	refuse := func(msg string) error {
		if !slices.ContainsFunc(prevConditions(prev), func(o condition) bool { return o.Message == msg }) {
			c.cfg.Logger.Info(msgRefused, "kind", kindProject, "resource", it.key, "error", msg)
		}
		return c.writeStatus(ctx, kindProject, u, renderProjectStatus([]condition{{Type: condInvalidSpec, Message: msg}}, prev, c.cfg.now()))
	}
	p, err := projectOf(u.Object, it.key)
	if err != nil {
		return refuse(err.Error())
	}
	cur, err := c.apps.Project(ctx, p.Name)
	found := err == nil
	if err != nil && !isStatus(err, http.StatusNotFound) {
		return err
	}
	if by := cur.Annotations[DeclaredBy]; found && by != "" && by != it.key {
		return refuse(fmt.Sprintf("project %s is declared by the AppProject %s", p.Name, by))
	}
	h := hashOf(p)
	c.mu.Lock()
	if found && c.applied[it] != h && hashOf(cur) == h {
		c.applied[it] = h // applied before a restart
	}
	apply := !found || c.applied[it] != h
	c.mu.Unlock()
	if apply {
		err := c.apps.ApplyProject(ctx, p)
		if msg, refused := refusal(err); refused {
			return refuse(msg)
		}
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.applied[it] = h
		c.mu.Unlock()
		c.cfg.Logger.Info(msgApplied, "kind", kindProject, "resource", it.key, "project", p.Name)
		c.requeueApps() // those refused for want of this project
	}
	return c.writeStatus(ctx, kindProject, u, renderProjectStatus(nil, prev, c.cfg.now()))
}

// removeGoneProject deletes the project of a deleted AppProject, if the
// resource declared it; while apps use it, the deletion is retried.
func (c *Controller) removeGoneProject(ctx context.Context, it item) error {
	c.mu.Lock()
	ref, ok := c.gone[it]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	p, err := c.apps.Project(ctx, ref.name)
	switch {
	case isStatus(err, http.StatusNotFound):
	case err != nil:
		return err
	case p.Annotations[DeclaredBy] == it.key:
		if err := c.apps.DeleteProject(ctx, ref.name); err != nil && !isStatus(err, http.StatusNotFound) {
			return err
		}
		c.cfg.Logger.Info(msgDeleted, "kind", kindProject, "resource", it.key, "project", ref.name)
	}
	c.mu.Lock()
	delete(c.gone, it)
	c.mu.Unlock()
	return nil
}

// dropMissingProjects stops watching AppProjects where they cannot be
// listed (a cluster with Windlass's CRD for Applications only, say), so
// that their informers do not hold up the Applications'.
func (c *Controller) dropMissingProjects(ctx context.Context) {
	// A CRD is cluster-wide: one namespace tells.
	_, err := c.dyn.Resource(c.cfg.projects).Namespace(c.cfg.Namespaces[0]).List(ctx, metav1.ListOptions{Limit: 1})
	if err == nil {
		return
	}
	c.cfg.Logger.Warn(msgNoProjects, "error", err)
	for it := range c.informers {
		if it.kind == kindProject {
			delete(c.informers, it)
		}
	}
}

// requeueApps queues every watched Application.
func (c *Controller) requeueApps() {
	for it, inf := range c.informers {
		if it.kind != kindApp {
			continue
		}
		for _, key := range inf.GetIndexer().ListKeys() {
			c.queue.Add(item{kindApp, key})
		}
	}
}
