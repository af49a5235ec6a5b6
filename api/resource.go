package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/project"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/workflows"
)

// GET, PATCH and DELETE .../resource act on one of the app's resources,
// named by ?group=, ?kind=, ?namespace= (default: none for a
// cluster-scoped kind, else the app's destination namespace) and ?name=:
// an object of its resource tree (a managed object or one of its
// descendants, such as a Deployment's pods). Anything else is 404, whatever the cluster holds.
// Writes need RBAC's fine-grained actions update/<group>/<kind>/<ns>/<name>
// and delete/... on the app, and the app's project must permit the
// resource's kind and namespace; each is recorded in the app's events.

// resourceTarget is the request's resource, found in the app's tree.
type resourceTarget struct {
	inspected
	key  appspec.ResourceKey
	node cluster.ResourceNode
	tree cluster.ResourceTreeOutput
}

// resourceKey reads ?group=, ?kind=, ?namespace= and ?name= (kind and name
// required).
func resourceKey(c *echo.Context) (appspec.ResourceKey, error) {
	k := appspec.ResourceKey{Group: c.QueryParam("group"), Kind: c.QueryParam("kind"), Namespace: c.QueryParam("namespace"), Name: c.QueryParam("name")}
	if k.Kind == "" || k.Name == "" {
		return k, problem(http.StatusBadRequest, "kind and name are required")
	}
	return k, nil
}

// subresourceAction is RBAC's fine-grained action on one of an app's
// resources: <verb>/<group>/<kind>/<namespace>/<name>.
func subresourceAction(verb string, k appspec.ResourceKey) string {
	return verb + "/" + k.Group + "/" + k.Kind + "/" + k.Namespace + "/" + k.Name
}

// permsFunc lists the permissions ({resource, action} on the app) that a
// request needs on a resource besides get on the app.
type permsFunc func(key appspec.ResourceKey) [][2]string

// appResource authorises the request and finds the resource in the app's
// tree. The caller needs perms, checked first and again for the resource
// found when the request named no namespace, and get on the app.
func (s *Server) appResource(c *echo.Context, perms permsFunc) (resourceTarget, error) {
	var t resourceTarget
	key, err := resourceKey(c)
	if err != nil {
		return t, err
	}
	name, err := appName(c)
	if err != nil {
		return t, err
	}
	proj, err := projectParam(c)
	if err != nil {
		return t, err
	}
	authorize := func(key appspec.ResourceKey) error {
		if perms == nil {
			return nil
		}
		for _, p := range perms(key) {
			if err := s.authorize(c, p[0], p[1], rbac.AppObject(proj, name)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := authorize(key); err != nil {
		return t, err
	}
	if t.inspected, err = s.inspect(c); err != nil {
		return t, err
	}
	spec := t.view.Spec
	t.tree, err = s.opts.Inspector.ResourceTree(c.Request().Context(), cluster.ResourceTreeInput{Target: cluster.TargetFor(spec), Manifests: &t.ref})
	if err != nil {
		return t, s.inspectError(c, t.inspected, err)
	}
	// Without a namespace, a cluster-scoped object, else one of the
	// app's destination namespace.
	inDest := key
	inDest.Namespace = spec.Destination.Namespace
	for _, want := range []appspec.ResourceKey{key, inDest} {
		for _, n := range t.tree.Nodes {
			if n.ResourceKey == want {
				t.key, t.node = want, n
				if want != key {
					if err := authorize(want); err != nil {
						return t, err
					}
				}
				return t, s.checkResourceProject(c.Request().Context(), spec, want)
			}
		}
		if key.Namespace != "" {
			break
		}
	}
	return t, problem(http.StatusNotFound, "resource "+key.String()+" is not one of the application's resources")
}

// writePerm needs verb's sub-resource action on the resource.
func writePerm(verb string) permsFunc {
	return func(k appspec.ResourceKey) [][2]string {
		return [][2]string{{rbac.ResourceApplications, subresourceAction(verb, k)}}
	}
}

// checkResourceProject answers 403 when the app's project does not permit
// the resource's kind or its namespace on the app's cluster.
func (s *Server) checkResourceProject(ctx context.Context, app appspec.Application, key appspec.ResourceKey) error {
	p, err := s.opts.Settings.Project(ctx, app.Project)
	if errors.Is(err, project.ErrNotFound) {
		return problem(http.StatusForbidden, "project "+app.Project+" does not exist")
	}
	if err != nil {
		return err
	}
	if !p.PermitsResource(key.Group, key.Kind, key.Namespace != "") {
		return problem(http.StatusForbidden, "kind "+key.Kind+" of group "+strconv.Quote(key.Group)+" is not permitted in project "+p.Name)
	}
	if key.Namespace != "" && !p.PermitsDestination(appspec.Destination{Server: app.Destination.Server, Namespace: key.Namespace}) {
		return problem(http.StatusForbidden, "namespace "+key.Namespace+" of "+app.Destination.Server+" is not permitted in project "+p.Name)
	}
	return nil
}

// kubeError maps an error of the destination cluster: the API server's
// own answers keep their status and message (a refused patch says why);
// anything else means the cluster could not be reached.
func kubeError(err error) error {
	if meta.IsNoMatchError(err) {
		return problem(http.StatusNotFound, err.Error())
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		code := int(s.Code)
		if code < 400 || code > 599 {
			code = http.StatusBadGateway
		}
		return problem(code, s.Message)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return problem(http.StatusServiceUnavailable, "the cluster did not answer in time")
	}
	return problem(http.StatusServiceUnavailable, "cannot reach the cluster: "+err.Error())
}

// recordResourceEvent records a write in the app's events, with the
// caller, and refreshes the app so that it shows the write's effect.
func (s *Server) recordResourceEvent(ctx context.Context, id, reason, msg string) {
	req := workflows.RefreshRequest{Live: true, Reason: "api: " + reason,
		Event: &workflows.Event{Type: workflows.EventNormal, Reason: reason, Message: msg}}
	if err := s.c.SignalWorkflow(ctx, id, "", workflows.SignalRefresh, req); err != nil {
		s.opts.Logger.Warn(msgRecordFailed, "app", id, "reason", reason, "error", err)
	}
}

const msgRecordFailed = "recording a resource write in the app's events failed"

// getResource answers the live object, without managed fields.
func (s *Server) getResource(c *echo.Context) error {
	t, err := s.appResource(c, nil)
	if err != nil {
		return err
	}
	obj, err := s.opts.Inspector.LiveObject(c.Request().Context(), t.view.Spec.Destination.Server, t.key)
	if err != nil {
		return kubeError(err)
	}
	manifest.MaskSecrets(obj)
	return c.JSON(http.StatusOK, obj)
}

// patchTypes are the patch types of ?patchType=, by short name and media type.
var patchTypes = map[string]types.PatchType{
	"merge": types.MergePatchType, "strategic": types.StrategicMergePatchType, "json": types.JSONPatchType,
	string(types.MergePatchType): types.MergePatchType, string(types.StrategicMergePatchType): types.StrategicMergePatchType,
	string(types.JSONPatchType): types.JSONPatchType,
}

// patchResource patches the resource with the body: ?patchType= merge (the
// default), strategic or json, or their media types. It answers the
// patched object.
func (s *Server) patchResource(c *echo.Context) error {
	pt, ok := patchTypes[c.QueryParam("patchType")]
	if c.QueryParam("patchType") == "" {
		pt, ok = types.MergePatchType, true
	}
	if !ok {
		return problem(http.StatusBadRequest, "patchType "+strconv.Quote(c.QueryParam("patchType"))+": want merge, strategic or json")
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return problem(http.StatusBadRequest, "the body holds no patch")
	}
	t, err := s.appResource(c, writePerm(rbac.ActionUpdate))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	obj, err := s.opts.Inspector.PatchObject(ctx, t.view.Spec.Destination.Server, t.key, pt, body)
	if err != nil {
		return kubeError(err)
	}
	s.recordResourceEvent(ctx, t.id, "ResourcePatched", t.key.Label()+" patched by "+initiator(c)+" ("+string(pt)+")")
	manifest.MaskSecrets(obj)
	return c.JSON(http.StatusOK, obj)
}

// deleteResource deletes the resource: ?force=true deletes it at once (a
// grace period of zero), ?orphan=true leaves its dependents.
func (s *Server) deleteResource(c *echo.Context) error {
	var o cluster.DeleteOptions
	for _, f := range []struct {
		param string
		into  *bool
	}{{"force", &o.Force}, {"orphan", &o.Orphan}} {
		if v := c.QueryParam(f.param); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return problem(http.StatusBadRequest, f.param+" "+strconv.Quote(v)+": want true or false")
			}
			*f.into = b
		}
	}
	t, err := s.appResource(c, writePerm(rbac.ActionDelete))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.opts.Inspector.DeleteObject(ctx, t.view.Spec.Destination.Server, t.key, o); err != nil {
		return kubeError(err)
	}
	msg := t.key.Label() + " deleted by " + initiator(c)
	if o.Force {
		msg += " (force)"
	}
	if o.Orphan {
		msg += " (orphan)"
	}
	s.recordResourceEvent(ctx, t.id, "ResourceDeleted", msg)
	return c.NoContent(http.StatusNoContent)
}
