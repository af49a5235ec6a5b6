package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

const (
	msgResourcesGone       = "full resource list gone from the cache; serving the bounded list"
	msgResourcesUnreadable = "full resource list unreadable; serving the bounded list"
)

// resourceList is the full list last loaded for a reference, which a
// stream keeps so that it reads the cache once a list.
type resourceList struct {
	ref       string
	resources []appspec.ResourceStatus
}

// fullResources puts the app's full resource list into view when its
// status names one (ResourcesRef) that the cache still holds: the list
// serves as stored, with the entries the status holds, which a running
// sync updates, in place of its own. Otherwise view keeps the bounded
// list and the count of those left out. last, when not nil, holds the
// list loaded before, and is updated.
func (s *Server) fullResources(ctx context.Context, view *workflows.AppView, last *resourceList) {
	st := &view.Status
	if st.ResourcesRef == "" || s.opts.Inspector == nil {
		return
	}
	var full []appspec.ResourceStatus
	if last != nil && last.ref == st.ResourcesRef {
		full = last.resources
	} else {
		rs, err := s.opts.Inspector.LoadResources(ctx, st.ResourcesRef)
		switch {
		case errors.Is(err, render.ErrCacheMiss):
			s.opts.Logger.Debug(msgResourcesGone, "app", view.Spec.Project+"/"+view.Spec.Name, "ref", st.ResourcesRef)
			return
		case err != nil:
			s.opts.Logger.Warn(msgResourcesUnreadable, "app", view.Spec.Project+"/"+view.Spec.Name, "ref", st.ResourcesRef, "error", err)
			return
		}
		full = rs
		if last != nil {
			*last = resourceList{ref: st.ResourcesRef, resources: rs}
		}
	}
	current := make(map[appspec.ResourceKey]appspec.ResourceStatus, len(st.Resources))
	for _, r := range st.Resources {
		current[r.ResourceKey] = r
	}
	out := make([]appspec.ResourceStatus, len(full))
	for i, r := range full {
		if c, ok := current[r.ResourceKey]; ok {
			r = c
		}
		out[i] = r
	}
	st.Resources, st.OmittedResources, st.ResourcesRef = out, 0, ""
}

// appResources answers GET .../resources: the app's full resource list.
// It queries the workflow itself, so that a workflow that cannot answer
// is an error here, not the last published view.
func (s *Server) appResources(c *echo.Context) error {
	id, err := s.appID(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v, err := s.c.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
	if err != nil {
		return err
	}
	var view workflows.AppView
	if err := v.Get(&view); err != nil {
		return err
	}
	s.fullResources(ctx, &view, nil)
	s.withHealthTimes(ctx, &view, nil)
	return c.JSON(http.StatusOK, view.Status.Resources)
}
