package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/workflows"
)

// Inspector reads an app's rendered manifests and full resource list
// (from the manifest cache; the API never renders) and its live state, for
// the manifests, diff, tree, events and resource actions endpoints and the
// app's resources, and reads and writes one of its resources.
// NewInspector makes the real one.
type Inspector interface {
	Load(ctx context.Context, ref render.ManifestRef) ([]*unstructured.Unstructured, error)
	LoadResources(ctx context.Context, ref string) ([]appspec.ResourceStatus, error)
	Diff(ctx context.Context, in cluster.CompareInput) (cluster.DiffOutput, error)
	ResourceTree(ctx context.Context, in cluster.ResourceTreeInput) (cluster.ResourceTreeOutput, error)
	Events(ctx context.Context, in cluster.ResourceTreeInput) ([]cluster.Event, error)
	ListActions(ctx context.Context, in cluster.ActionInput) ([]actions.Action, error)
	// One resource of an app, for .../resource and .../logs.
	LiveObject(ctx context.Context, server string, key appspec.ResourceKey) (map[string]any, error)
	PatchObject(ctx context.Context, server string, key appspec.ResourceKey, pt types.PatchType, patch []byte) (map[string]any, error)
	DeleteObject(ctx context.Context, server string, key appspec.ResourceKey, o cluster.DeleteOptions) error
	PodLogs(ctx context.Context, server, namespace, pod string, opts corev1.PodLogOptions) (io.ReadCloser, string, error)
}

type inspector struct {
	render.CacheReader
	cluster.ResourceLists
	*cluster.Activities
}

// NewInspector reads manifests from store and live state through
// clusters, as the worker's activities do (pass the worker's health
// checker and system-wide ignoreDifferences in opts, so that both agree).
func NewInspector(store render.Store, clusters cluster.ClientSource, log *slog.Logger, opts ...cluster.Option) (Inspector, error) {
	reader := render.CacheReader{Store: store}
	a, err := cluster.New(reader, clusters, log, opts...)
	if err != nil {
		return nil, err
	}
	return inspector{CacheReader: reader, ResourceLists: cluster.ResourceLists{Store: store}, Activities: a}, nil
}

// retryAfterRender is the Retry-After of a 503 answered while the app
// renders its manifests again.
const retryAfterRender = "2"

// inspected is what the inspecting endpoints start from.
type inspected struct {
	id   string
	view workflows.AppView
	ref  render.ManifestRef
}

// inspect authorises a get of the app and reads its spec, status and
// last rendered manifests.
func (s *Server) inspect(c *echo.Context) (inspected, error) {
	var in inspected
	id, err := s.appID(c, rbac.ActionGet)
	if err != nil {
		return in, err
	}
	if s.opts.Inspector == nil {
		return in, problem(http.StatusNotImplemented, "this server has no access to the manifest cache and clusters (no Inspector configured)")
	}
	ctx := c.Request().Context()
	if in.view, err = s.status(ctx, id); err != nil {
		return in, err
	}
	if in.view.Spec.Destination, err = s.resolveDestination(ctx, in.view.Spec.Destination, http.StatusConflict); err != nil {
		return in, err
	}
	v, err := s.c.QueryWorkflow(ctx, id, "", workflows.QueryManifests)
	if err != nil {
		return in, err
	}
	var ref *render.ManifestRef
	if err := v.Get(&ref); err != nil {
		return in, err
	}
	if ref == nil {
		msg := "the application has not rendered its manifests yet"
		if m := in.view.Status.Message; m != "" {
			msg += ": " + m
		}
		return in, problem(http.StatusConflict, msg)
	}
	in.id, in.ref = id, *ref
	return in, nil
}

// inspectError maps an Inspector's error. Manifests the cache no longer
// holds make the app render again and answer 503 with Retry-After;
// anything else is the cluster or the cache failing. The refresh is a hard
// one: a normal pass of an app whose live state has not changed is
// answered from the compare memo and loads no manifests, so it would not
// put them back.
func (s *Server) inspectError(c *echo.Context, in inspected, err error) error {
	ctx := c.Request().Context()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return problem(http.StatusServiceUnavailable, "reading the live state timed out")
	}
	if errors.Is(err, render.ErrCacheMiss) {
		req := workflows.RefreshRequest{Hard: true, Reason: "api: manifests not in the cache"}
		if serr := s.c.SignalWorkflow(ctx, in.id, "", workflows.SignalRefresh, req); serr != nil {
			return serr
		}
		c.Response().Header().Set("Retry-After", retryAfterRender)
		return problem(http.StatusServiceUnavailable, "the rendered manifests have expired from the cache; the application is rendering them again, retry shortly")
	}
	return problem(http.StatusServiceUnavailable, "cannot read the application's state: "+err.Error())
}

// ManifestsView is the answer of GET .../manifests.
type ManifestsView struct {
	Revision  string           `json:"revision"`
	SHA       string           `json:"sha"`
	Manifests []map[string]any `json:"manifests"`
}

func (s *Server) appManifests(c *echo.Context) error {
	in, err := s.inspect(c)
	if err != nil {
		return err
	}
	objs, err := s.opts.Inspector.Load(c.Request().Context(), in.ref)
	if err != nil {
		return s.inspectError(c, in, err)
	}
	out := ManifestsView{Revision: in.view.Status.Revision, SHA: in.ref.SHA, Manifests: make([]map[string]any, len(objs))}
	for i, o := range objs {
		manifest.MaskSecrets(o.Object)
		out.Manifests[i] = o.Object
	}
	return c.JSON(http.StatusOK, out)
}

// DiffView is the answer of GET .../diff.
type DiffView struct {
	Revision string `json:"revision"`
	SHA      string `json:"sha"`
	cluster.DiffOutput
}

// appDiff compares the app's last rendered manifests with the live state.
// ?group=, ?kind=, ?namespace= and ?name= keep the matching resources only.
func (s *Server) appDiff(c *echo.Context) error {
	in, err := s.inspect(c)
	if err != nil {
		return err
	}
	d, err := s.opts.Inspector.Diff(c.Request().Context(), cluster.CompareInput{Target: cluster.TargetFor(in.view.Spec), Manifests: in.ref})
	if err != nil {
		return s.inspectError(c, in, err)
	}
	d.Resources = slices.DeleteFunc(d.Resources, func(r cluster.ResourceDiff) bool { return !resourceFilter(c, r.ResourceKey) })
	return c.JSON(http.StatusOK, DiffView{Revision: in.view.Status.Revision, SHA: in.ref.SHA, DiffOutput: d})
}

// resourceFilter reports whether key matches the request's resource
// filters (each one that is set must match exactly).
func resourceFilter(c *echo.Context, key appspec.ResourceKey) bool {
	for _, f := range []struct{ param, value string }{
		{"group", key.Group}, {"kind", key.Kind}, {"namespace", key.Namespace}, {"name", key.Name},
	} {
		if v := c.QueryParam(f.param); v != "" && v != f.value {
			return false
		}
	}
	return true
}

func (s *Server) appTree(c *echo.Context) error {
	in, err := s.inspect(c)
	if err != nil {
		return err
	}
	tree, err := s.opts.Inspector.ResourceTree(c.Request().Context(), cluster.ResourceTreeInput{Target: cluster.TargetFor(in.view.Spec), Manifests: &in.ref})
	if err != nil {
		return s.inspectError(c, in, err)
	}
	return c.JSON(http.StatusOK, tree)
}

// AppEvent is one event of GET .../events: the app's own (Source
// "windlass") or a Kubernetes event of one of its objects ("kubernetes").
type AppEvent struct {
	cluster.Event
	Source string `json:"source"`
}

// Event sources.
const (
	SourceWindlass   = "windlass"
	SourceKubernetes = "kubernetes"
)

// EventsView is the answer of GET .../events, newest first.
type EventsView struct {
	Events []AppEvent `json:"events"`
}

func (s *Server) appEvents(c *echo.Context) error {
	in, err := s.inspect(c)
	if err != nil {
		return err
	}
	spec := in.view.Spec
	kevs, err := s.opts.Inspector.Events(c.Request().Context(), cluster.ResourceTreeInput{Target: cluster.TargetFor(spec), Manifests: &in.ref})
	if err != nil {
		return s.inspectError(c, in, err)
	}
	self := appspec.ResourceKey{Group: "windlass.dev", Kind: "Application", Name: spec.Name}
	out := EventsView{Events: make([]AppEvent, 0, len(kevs)+len(in.view.Status.Events))}
	for _, e := range in.view.Status.Events {
		ev := cluster.Event{Time: e.Time, Type: e.Type, Reason: e.Reason, Message: e.Message, Object: self}
		out.Events = append(out.Events, AppEvent{Event: ev, Source: SourceWindlass})
	}
	for _, e := range kevs {
		out.Events = append(out.Events, AppEvent{Event: e, Source: SourceKubernetes})
	}
	slices.SortStableFunc(out.Events, func(x, y AppEvent) int { return y.Time.Compare(x.Time) })
	return c.JSON(http.StatusOK, out)
}
