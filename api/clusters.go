package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
	"k8s.io/client-go/discovery"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/netdeadline"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/workflows"
)

func (s *Server) clusterRoutes(g *echo.Group) {
	g.GET("/clusters", s.listClusters)
	g.POST("/clusters", s.createCluster)
	g.DELETE("/clusters/:name", s.deleteCluster)
}

// ClusterList lists the destination clusters, without their secrets.
type ClusterList struct {
	Items []settings.ClusterView `json:"items"`
}

// inCluster is the cluster Windlass runs in, always registered.
var inCluster = settings.ClusterView{Name: "in-cluster", Server: appspec.InClusterServer, HasCredentials: true}

func (s *Server) listClusters(c *echo.Context) error {
	list, err := s.opts.Settings.Clusters(c.Request().Context())
	if err != nil {
		return err
	}
	out := ClusterList{Items: []settings.ClusterView{}}
	if s.allowed(c, rbac.ResourceClusters, rbac.ActionGet, inCluster.Server) {
		out.Items = append(out.Items, inCluster)
	}
	for _, cl := range list {
		if s.allowed(c, rbac.ResourceClusters, rbac.ActionGet, cl.Server) {
			out.Items = append(out.Items, cl.View())
		}
	}
	return c.JSON(http.StatusOK, out)
}

// ClusterRequest registers a cluster: a server URL with a bearer token or
// a client certificate (plus CA), or a kubeconfig's context.
type ClusterRequest struct {
	settings.Cluster
	// Kubeconfig is a kubeconfig file's content, Context one of its
	// contexts (default: its current context).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
}

// createCluster registers a cluster after testing its connection.
func (s *Server) createCluster(c *echo.Context) error {
	var req ClusterRequest
	if err := echo.BindBody(c, &req); err != nil {
		return problem(http.StatusBadRequest, "request body is not a valid cluster: "+err.Error())
	}
	cl := req.Cluster
	if req.Kubeconfig != "" {
		var err error
		if cl, err = settings.ClusterFromKubeconfig([]byte(req.Kubeconfig), req.Context, req.Name); err != nil {
			return err
		}
		cl.TaskQueue = req.TaskQueue
		cl.Labels = req.Labels
	}
	if err := cl.Validate(); err != nil {
		return err
	}
	if err := s.authorize(c, rbac.ResourceClusters, rbac.ActionCreate, cl.Server); err != nil {
		return err
	}
	check := s.opts.ClusterCheck
	if check == nil {
		check = func(cl settings.Cluster) error { return serverVersion(cl, s.opts.ClusterTimeout) }
	}
	if err := check(cl); err != nil {
		pr := problem(http.StatusUnprocessableEntity, "connection test failed: "+err.Error())
		pr.Field = "server"
		return pr
	}
	ctx := c.Request().Context()
	if err := s.opts.Settings.PutCluster(ctx, cl); err != nil {
		return err
	}
	// The drift watch of the new destination (workers also start those of
	// every registered cluster when they start).
	if err := workflows.StartClusterWatch(ctx, s.c, s.opts.TaskQueue, cl.Server, 0); err != nil {
		s.opts.Logger.Warn(msgClusterWatch, "server", cl.Server, "error", err)
	}
	return c.JSON(http.StatusCreated, cl.View())
}

// msgClusterWatch logs a watch that could not be started or stopped: the
// registration stands, and workers start the watch when they start.
const msgClusterWatch = "cluster watch not started or stopped"

// The connection test of a cluster: the server may stay silent for
// DefaultClusterTimeout (Options.ClusterTimeout), and the whole request
// takes at most clusterCheckTotal.
const (
	DefaultClusterTimeout = netdeadline.DefaultTimeout
	clusterCheckTotal     = 30 * time.Second
)

// serverVersion asks the cluster for its version; timeout bounds the
// server's silence (0: DefaultClusterTimeout).
func serverVersion(cl settings.Cluster, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultClusterTimeout
	}
	cfg := cl.RESTConfig()
	cfg.Timeout = clusterCheckTotal
	cfg.Dial = netdeadline.Dialer{Timeout: timeout}.DialContext
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := d.ServerVersion(); err != nil {
		return fmt.Errorf("%s: %w", cl.Server, err)
	}
	return nil
}

// deleteCluster forgets a cluster no application deploys to.
func (s *Server) deleteCluster(c *echo.Context) error {
	name := c.Param("name")
	if name == inCluster.Name {
		return problem(http.StatusBadRequest, "in-cluster is built in and cannot be removed")
	}
	ctx := c.Request().Context()
	cl, err := s.findCluster(ctx, name)
	if err != nil {
		// Unknown to callers who may not delete it by name either, so
		// that a 404 tells them nothing.
		if aerr := s.authorize(c, rbac.ResourceClusters, rbac.ActionDelete, name); aerr != nil {
			return aerr
		}
		return err
	}
	if err := s.authorize(c, rbac.ResourceClusters, rbac.ActionDelete, cl.Server); err != nil {
		return err
	}
	n, err := s.countApps(ctx, workflows.SearchAttrCluster, cl.Server)
	if err != nil {
		return err
	}
	if n > 0 {
		return problem(http.StatusConflict, fmt.Sprintf("cluster %s is the destination of %d applications", name, n))
	}
	if err := s.opts.Settings.DeleteCluster(ctx, name); err != nil {
		return err
	}
	if err := workflows.StopClusterWatch(ctx, s.c, cl.Server); err != nil {
		s.opts.Logger.Warn(msgClusterWatch, "server", cl.Server, "error", err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) findCluster(ctx context.Context, name string) (settings.Cluster, error) {
	list, err := s.opts.Settings.Clusters(ctx)
	if err != nil {
		return settings.Cluster{}, err
	}
	for _, cl := range list {
		if cl.Name == name {
			return cl, nil
		}
	}
	return settings.Cluster{}, problem(http.StatusNotFound, "cluster "+name+" is not registered")
}
