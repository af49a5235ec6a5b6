package api

import (
	"errors"
	"io"
	"net/http"
	"slices"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// AppSetPreview is the answer of POST /api/v1/applicationsets/generate:
// the apps the set would make, in generator order. Nothing is written.
type AppSetPreview struct {
	Applications []appset.App `json:"applications"`
}

func (s *Server) appSetRoutes(v1 *echo.Group) {
	v1.POST("/applicationsets/generate", s.generateAppSet)
	v1.GET("/applicationsets", s.listAppSets)
	v1.POST("/applicationsets", s.createAppSet)
	v1.GET("/applicationsets/:name", s.getAppSet)
	v1.PUT("/applicationsets/:name", s.updateAppSet)
	v1.DELETE("/applicationsets/:name", s.deleteAppSet)
	v1.POST("/applicationsets/:name/refresh", s.refreshAppSet)
	v1.GET("/stream/applicationsets", s.streamAppSets)
	v1.GET("/stream/applicationsets/:name", s.streamAppSet)
}

// generateAppSet evaluates an ApplicationSet (YAML or JSON) and answers
// the apps it yields, as argocd appset generate does. The caller needs
// create on applicationsets <project>/<set> for the template's project
// before anything is read, and for every project the apps land in.
func (s *Server) generateAppSet(c *echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	set, err := appset.Parse(body)
	if err != nil {
		return appSetProblem(err)
	}
	tmplProject, _ := specOf(set.Spec.Template)["project"].(string)
	if tmplProject == "" {
		tmplProject = appspec.DefaultProject
	}
	if err := s.authorize(c, rbac.ResourceApplicationSets, rbac.ActionCreate, rbac.AppObject(tmplProject, set.Metadata.Name)); err != nil {
		return err
	}
	apps, err := s.appSets.Generate(c.Request().Context(), set)
	if err != nil {
		return appSetProblem(err)
	}
	var checked []string
	for _, a := range apps {
		p := a.Application.Project
		if p == tmplProject || slices.Contains(checked, p) {
			continue
		}
		if err := s.authorize(c, rbac.ResourceApplicationSets, rbac.ActionCreate, rbac.AppObject(p, set.Metadata.Name)); err != nil {
			return err
		}
		checked = append(checked, p)
	}
	if apps == nil {
		apps = []appset.App{}
	}
	return c.JSON(http.StatusOK, AppSetPreview{Applications: apps})
}

// specOf is the spec of a set's template.
func specOf(t appset.Template) map[string]any {
	spec, _ := t["spec"].(map[string]any)
	return spec
}

// appSetProblem maps the errors of reading or evaluating a set: a bad set
// is 400 (naming the field when one is at fault), a set that yields
// duplicate or too many apps 422, a failing Git server, plugin or provider
// API 502, a generator this server cannot run 501.
func appSetProblem(err error) error {
	var fe *appset.FieldError
	switch {
	case errors.As(err, &fe):
		pr := problem(http.StatusBadRequest, err.Error())
		pr.Field = fe.Field
		return pr
	case errors.Is(err, appset.ErrDuplicateApp), errors.Is(err, appset.ErrTooManyElements):
		return problem(http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, appset.ErrInvalid):
		return problem(http.StatusBadRequest, err.Error())
	case errors.Is(err, appset.ErrSource):
		return problem(http.StatusBadGateway, err.Error())
	case errors.Is(err, appset.ErrUnavailable):
		return problem(http.StatusNotImplemented, err.Error())
	}
	return err
}
