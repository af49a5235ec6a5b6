package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"go.temporal.io/sdk/client"

	"github.com/windlass-cd/windlass/internal/appspec"
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
}

// Server is the REST API.
type Server struct {
	e    *echo.Echo
	c    client.Client
	opts Options
}

// maxBodyBytes caps request bodies.
const maxBodyBytes = 1 << 20

// New builds the API on a Temporal client.
func New(c client.Client, opts Options) *Server {
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
	e := echo.NewWithConfig(echo.Config{Logger: opts.Logger, HTTPErrorHandler: errorHandler(opts.Logger)})
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit(maxBodyBytes))
	s := &Server{e: e, c: c, opts: opts}
	e.GET("/healthz", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
	v1 := e.Group("/api/v1")
	v1.GET("/applications", s.listApps)
	v1.POST("/applications", s.createApp)
	v1.GET("/applications/:name", s.getApp)
	v1.PUT("/applications/:name", s.updateApp)
	v1.POST("/applications/:name/sync", s.syncApp)
	v1.POST("/applications/:name/refresh", s.refreshApp)
	v1.POST("/applications/:name/rollback", s.rollbackApp)
	v1.POST("/applications/:name/terminate", s.terminateApp)
	v1.POST("/applications/:name/confirm-deletion", s.confirmDeletion)
	v1.DELETE("/applications/:name", s.deleteApp)
	v1.GET("/applications/:name/history", s.queryApp(workflows.QueryHistory, func() any { return &workflows.HistoryView{} }))
	v1.GET("/applications/:name/syncs", s.syncHistory)
	v1.GET("/applications/:name/resources", s.queryApp(workflows.QueryResources, func() any { return &[]appspec.ResourceStatus{} }))
	v1.GET("/applications/:name/operation", s.queryApp(workflows.QueryOperation, func() any { return &workflows.Operation{} }))
	return s
}

// ServeHTTP makes the server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }
