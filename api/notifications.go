package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/windlass-cd/windlass/activities/notify"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/notifications"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/workflows"
)

// NotificationsConfig is the notifications configuration saved through
// the API: argocd-notifications-cm's data (or the whole ConfigMap) in
// YAML. It holds $references, never credentials (Parse refuses literals).
type NotificationsConfig struct {
	Config string `json:"config"`
}

// NotificationsView answers GET /settings/notifications.
type NotificationsView struct {
	Config    string                `json:"config"`
	Services  []NotificationService `json:"services"`
	Triggers  []string              `json:"triggers"`
	Templates []string              `json:"templates"`
}

// NotificationService is one configured service.
type NotificationService struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func (s *Server) notificationRoutes(g *echo.Group) {
	g.GET("/settings/notifications", s.getNotifications)
	g.PUT("/settings/notifications", s.putNotifications)
	g.GET("/settings/notifications/secret", s.getNotificationsSecret)
	g.PATCH("/settings/notifications/secret", s.patchNotificationsSecret)
	g.GET("/applications/:name/notifications", s.queryApp(workflows.QueryNotifications, func() any { return &[]workflows.NotificationRecord{} }))
}

func (s *Server) getNotifications(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionGet, "*"); err != nil {
		return err
	}
	text, cfg, err := s.notificationsConfig(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, notificationsView(text, cfg))
}

// notificationsConfig reads the configuration saved through the API
// (empty when none is).
func (s *Server) notificationsConfig(ctx context.Context) (string, *notifications.Config, error) {
	d, err := s.opts.Settings.Secrets().Get(ctx, notify.ConfigSecretName)
	if errors.Is(err, secretstore.ErrNotFound) {
		d, err = map[string][]byte{}, nil
	}
	if err != nil {
		return "", nil, err
	}
	text := string(d[notify.ConfigKey])
	data, err := notifications.DecodeData([]byte(text))
	if err != nil {
		return "", nil, err
	}
	cfg, err := notifications.Parse(data)
	if err != nil {
		return "", nil, err
	}
	return text, cfg, nil
}

// checkSubscriptions refuses (422) subscription annotations of an app or
// a project that the saved configuration cannot deliver: an unknown
// trigger or service, or too many recipients. A worker configured from a
// file is not visible here; it reports them as app events instead.
func (s *Server) checkSubscriptions(ctx context.Context, annotations map[string]string) error {
	if !notifications.HasSubscriptions(annotations) {
		return nil
	}
	_, cfg, err := s.notificationsConfig(ctx)
	if err != nil {
		return err
	}
	if err := cfg.CheckSubscriptions(annotations); err != nil {
		pr := problem(http.StatusUnprocessableEntity, err.Error())
		pr.Field = "annotations"
		return pr
	}
	return nil
}

func notificationsView(text string, cfg *notifications.Config) NotificationsView {
	v := NotificationsView{Config: text, Services: []NotificationService{}, Triggers: cfg.TriggerNames(), Templates: []string{}}
	for _, n := range slices.Sorted(maps.Keys(cfg.Services)) {
		v.Services = append(v.Services, NotificationService{Name: n, Type: cfg.Services[n].Type})
	}
	v.Templates = append(v.Templates, slices.Sorted(maps.Keys(cfg.Templates))...)
	return v
}

// putNotifications validates a configuration and saves it: a template
// that does not parse, a condition that does not compile, an unknown
// service or too many recipients is refused now, with every problem.
func (s *Server) putNotifications(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionUpdate, "*"); err != nil {
		return err
	}
	var body NotificationsConfig
	if err := echo.BindBody(c, &body); err != nil {
		return problem(http.StatusBadRequest, "request body is not a notifications configuration: "+err.Error())
	}
	data, err := notifications.DecodeData([]byte(body.Config))
	if err == nil {
		var cfg *notifications.Config
		if cfg, err = notifications.Parse(data); err == nil {
			if err := s.opts.Settings.Secrets().Put(c.Request().Context(), notify.ConfigSecretName, map[string][]byte{notify.ConfigKey: []byte(body.Config)}); err != nil {
				return err
			}
			return c.JSON(http.StatusOK, notificationsView(body.Config, cfg))
		}
	}
	return problem(http.StatusUnprocessableEntity, err.Error())
}

// NotificationsSecretPatch changes keys of the notifications secret (Argo
// CD's argocd-notifications-secret), whose values the configuration's
// $references name: a value sets its key, null removes it, and keys not
// named stay.
type NotificationsSecretPatch struct {
	Data map[string]*string `json:"data"`
}

// NotificationsSecretView names the keys of the notifications secret; no
// endpoint returns their values.
type NotificationsSecretView struct {
	Keys []string `json:"keys"`
}

func (s *Server) getNotificationsSecret(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionGet, "*"); err != nil {
		return err
	}
	d, err := s.notificationsSecret(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, NotificationsSecretView{Keys: slices.Sorted(maps.Keys(d))})
}

func (s *Server) notificationsSecret(ctx context.Context) (map[string][]byte, error) {
	d, err := s.opts.Settings.Secrets().Get(ctx, notify.SecretName)
	if errors.Is(err, secretstore.ErrNotFound) {
		return map[string][]byte{}, nil
	}
	return d, err
}

// patchNotificationsSecret sets and removes keys of the notifications
// secret. A key that is not a valid Secret key, or an empty value, is
// refused (422) with every problem, and nothing changes.
func (s *Server) patchNotificationsSecret(c *echo.Context) error {
	if err := s.authorize(c, rbac.ResourceRepositories, rbac.ActionUpdate, "*"); err != nil {
		return err
	}
	var body NotificationsSecretPatch
	if err := echo.BindBody(c, &body); err != nil {
		return problem(http.StatusBadRequest, "request body is not a notifications secret patch: "+err.Error())
	}
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(body.Data)) {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			bad = append(bad, fmt.Sprintf("key %q: %s", k, strings.Join(errs, "; ")))
		} else if v := body.Data[k]; v != nil && *v == "" {
			bad = append(bad, fmt.Sprintf("key %q: the value is empty (null removes a key)", k))
		}
	}
	if len(body.Data) == 0 {
		bad = append(bad, "data names no key")
	}
	if len(bad) > 0 {
		pr := problem(http.StatusUnprocessableEntity, strings.Join(bad, "; "))
		pr.Field = "data"
		return pr
	}
	ctx := c.Request().Context()
	d, err := s.notificationsSecret(ctx)
	if err != nil {
		return err
	}
	for k, v := range body.Data {
		if v == nil {
			delete(d, k)
		} else {
			d[k] = []byte(*v)
		}
	}
	if err := s.opts.Settings.Secrets().Put(ctx, notify.SecretName, d); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, NotificationsSecretView{Keys: slices.Sorted(maps.Keys(d))})
}
