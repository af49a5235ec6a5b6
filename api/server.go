package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/api/sso"
	"github.com/windlass-cd/windlass/api/webhook"
	"github.com/windlass-cd/windlass/internal/appset"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/workflows"
)

// Options configure the API.
type Options struct {
	Logger    *slog.Logger
	TaskQueue string
	// AppConfig is passed to every new application workflow.
	AppConfig workflows.AppConfig
	// Namespace is the Temporal namespace (for visibility queries).
	Namespace string
	// SyncTimeout bounds how long POST .../sync waits for the sync to end.
	SyncTimeout time.Duration
	// RequestTimeout bounds every other request (default 60 s).
	RequestTimeout time.Duration

	// Auth authenticates callers; RBAC authorises them; Settings keeps
	// projects, repositories and clusters. All three are required.
	Auth     *auth.Service
	RBAC     *rbac.Enforcer
	Settings *settings.Store
	// Webhook holds the Git webhook secrets.
	Webhook webhook.Config
	// TemporalUIURL is the Temporal UI's base URL, for links to syncs.
	TemporalUIURL string
	// ClusterCheck tests a cluster's connection before it is registered
	// (nil: kube discovery of its version).
	ClusterCheck func(c settings.Cluster) error
	// RepoCheck tests a repository's connection before it is registered
	// (nil: an ls-remote with its credential).
	RepoCheck func(r settings.Repository) error
	// GitTimeout bounds a Git server's silence (SSH or HTTP(S)) in the
	// connection test (0: source.DefaultNetTimeout).
	GitTimeout time.Duration
	// ClusterTimeout bounds a cluster's silence in the connection test:
	// the dial, the TLS handshake and each read (0: DefaultClusterTimeout).
	ClusterTimeout time.Duration
	// SSO serves single sign-on under /api/v1/sso (nil: off, which
	// GET /api/v1/sso/config says).
	SSO *sso.Handler
	// Dex is the in-process Dex, served under its PathPrefix (/api/dex)
	// before the API's routes and middleware (nil: none).
	Dex Mounted
	// Inspector serves the manifests, diff, tree, events, resource and
	// logs endpoints (nil: they answer 501), and the full resource lists of apps with
	// more resources than their status holds (nil: the bounded lists).
	Inspector Inspector
	// Customizations lists the workers' resource customizations statuses
	// (nil: none are listed).
	Customizations CustomizationsStatuses
	// HealthHistory serves .../health-history and the lastTransitionTime
	// of app and resource health (nil: 501, and no times).
	HealthHistory HealthHistory
	// AppSets evaluates ApplicationSets for the preview (nil: one that
	// knows the registered clusters but has no Git reader or secret
	// store, so git, plugin and provider generators fail clearly).
	AppSets *appset.Evaluator
}

// Mounted is a handler served under a path prefix of its own.
type Mounted interface {
	http.Handler
	PathPrefix() string
}

// Server is the REST API.
type Server struct {
	e       *echo.Echo
	c       client.Client
	opts    Options
	appSets *appset.Evaluator
	known   lastKnown
}

// maxBodyBytes caps request bodies.
const maxBodyBytes = 1 << 20

// publicRoutes need no authentication.
var publicRoutes = []string{"GET /healthz", "POST /api/v1/session", "POST " + webhook.Path, "GET /api/v1/openapi.json",
	"GET /api/v1" + sso.PathConfig, "GET /api/v1" + sso.PathLogin, "GET /api/v1" + sso.PathCallback, "POST /api/v1" + sso.PathToken}

// New builds the API on a Temporal client.
func New(c client.Client, opts Options) (*Server, error) {
	if opts.Auth == nil || opts.RBAC == nil || opts.Settings == nil {
		return nil, errors.New("api: Auth, RBAC and Settings are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = workflows.TaskQueue
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 10 * time.Minute
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = time.Minute
	}
	e := echo.NewWithConfig(echo.Config{Logger: opts.Logger, HTTPErrorHandler: errorHandler(opts.Logger)})
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit(maxBodyBytes))
	e.Use(middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{
		Timeout: opts.RequestTimeout,
		// Operations wait up to SyncTimeout; streams run until closed
		// (logs bound themselves unless they follow).
		Skipper: func(c *echo.Context) bool {
			p := c.Path()
			return strings.HasSuffix(p, "/sync") || p == "/api/v1/applications/:name/logs" || strings.HasSuffix(p, "/rollback") || strings.HasPrefix(p, "/api/v1/stream") ||
				(c.Request().Method == http.MethodDelete && p == "/api/v1/applications/:name") ||
				// A set's pass and deletion touch each of its apps.
				p == "/api/v1/applicationsets/:name/refresh" || (c.Request().Method == http.MethodDelete && p == "/api/v1/applicationsets/:name")
		},
	}))
	ui := uiHandler(opts.Logger)
	e.Use(uiFallback(ui))
	e.Use(opts.Auth.Middleware(auth.WithSkipper(auth.PublicPaths(publicRoutes...))))
	s := &Server{e: e, c: c, opts: opts, appSets: opts.AppSets, known: newLastKnown()}
	if s.appSets == nil {
		s.appSets = appset.New(opts.Settings, nil, nil)
	}
	e.GET("/healthz", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/api/v1/openapi.json", serveOpenAPI)
	hook := webhook.NewHandler(opts.Webhook, appFinder{s}, appFinder{s}, opts.Logger)
	e.POST(webhook.Path, hook.Handle)
	v1 := e.Group("/api/v1")
	opts.Auth.RegisterRoutes(v1)
	if opts.SSO == nil {
		opts.SSO = sso.Disabled()
	}
	opts.SSO.RegisterRoutes(v1)
	v1.GET("/applications", s.listApps)
	v1.POST("/applications", s.createApp)
	v1.GET("/applications/:name", s.getApp)
	v1.PUT("/applications/:name", s.updateApp)
	v1.PATCH("/applications/:name", s.patchApp)
	v1.POST("/applications/:name/sync", s.syncApp)
	v1.POST("/applications/:name/refresh", s.refreshApp)
	v1.POST("/applications/:name/rollback", s.rollbackApp)
	v1.POST("/applications/:name/terminate", s.terminateApp)
	v1.POST("/applications/:name/confirm-deletion", s.confirmDeletion)
	v1.DELETE("/applications/:name", s.deleteApp)
	v1.GET("/applications/:name/history", s.queryApp(workflows.QueryHistory, func() any { return &workflows.HistoryView{} }))
	v1.GET("/applications/:name/syncs", s.syncHistory)
	v1.GET("/applications/:name/syncs/:seq/events", s.syncEvents)
	v1.GET("/applications/:name/resources", s.appResources)
	v1.GET("/applications/:name/health-history", s.appHealthHistory)
	v1.GET("/applications/:name/operation", s.queryApp(workflows.QueryOperation, func() any { return &workflows.Operation{} }))
	v1.GET("/applications/:name/diff", s.appDiff)
	v1.GET("/applications/:name/manifests", s.appManifests)
	v1.GET("/applications/:name/tree", s.appTree)
	v1.GET("/applications/:name/events", s.appEvents)
	v1.GET("/applications/:name/resource/actions", s.listActions)
	v1.POST("/applications/:name/resource/actions", s.runAction)
	v1.GET("/applications/:name/resource", s.getResource)
	v1.PATCH("/applications/:name/resource", s.patchResource)
	v1.DELETE("/applications/:name/resource", s.deleteResource)
	v1.GET("/applications/:name/logs", s.appLogs)
	v1.GET("/stream/applications", s.streamApps)
	v1.GET("/stream/applications/:name", s.streamApp)
	s.projectRoutes(v1)
	s.repoRoutes(v1)
	s.repoCredsRoutes(v1)
	s.gpgKeyRoutes(v1)
	s.clusterRoutes(v1)
	s.accountRoutes(v1)
	s.permissionRoutes(v1)
	s.customizationsRoutes(v1)
	s.notificationRoutes(v1)
	s.appSetRoutes(v1)
	s.rolloutRoutes(v1)
	uiRoutes(e, ui)
	return s, nil
}

// ServeHTTP makes the server an http.Handler. Requests under the Dex
// mount go to Dex, with the body limit.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := s.opts.Dex; d != nil {
		if p := d.PathPrefix(); r.URL.Path == p || strings.HasPrefix(r.URL.Path, p+"/") {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
			d.ServeHTTP(w, r)
			return
		}
	}
	s.e.ServeHTTP(w, r)
}
