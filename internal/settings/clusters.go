package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Cluster is a registered destination cluster with its credential: a
// bearer token, or a client certificate and key, plus the CA. The secret
// fields are write-only: View drops them.
type Cluster struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	BearerToken string `json:"bearerToken,omitempty"`
	// PEM data.
	CAData   string `json:"caData,omitempty"`
	CertData string `json:"certData,omitempty"`
	KeyData  string `json:"keyData,omitempty"`
	Insecure bool   `json:"insecure,omitempty"`
	// TaskQueue, when set, is the Temporal task queue of the cluster's
	// activities (apply, wait, prune, hooks, compare, watch): only workers
	// started with --task-queue naming it run them, which isolates a noisy
	// cluster. Empty: the default queue.
	TaskQueue string `json:"taskQueue,omitempty"`
	// Labels are Kubernetes-style labels, which the ApplicationSet
	// clusters generator selects on.
	Labels map[string]string `json:"labels,omitempty"`
}

// ClusterView is what the API shows of a cluster.
type ClusterView struct {
	Name           string            `json:"name"`
	Server         string            `json:"server"`
	HasCredentials bool              `json:"hasCredentials"`
	Insecure       bool              `json:"insecure,omitempty"`
	TaskQueue      string            `json:"taskQueue,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
}

// View drops the secrets.
func (c Cluster) View() ClusterView {
	return ClusterView{Name: c.Name, Server: c.Server, HasCredentials: c.BearerToken != "" || c.KeyData != "", Insecure: c.Insecure,
		TaskQueue: c.TaskQueue, Labels: c.Labels}
}

// Validate checks the cluster.
func (c Cluster) Validate() error {
	if err := appspec.ValidateProjectName(c.Name); err != nil {
		return fmt.Errorf("%w: cluster name: %w", ErrInvalid, err)
	}
	u, err := url.Parse(c.Server)
	switch {
	case c.Server == "":
		return fmt.Errorf("%w: server is required", ErrInvalid)
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("%w: server must be an http(s) URL", ErrInvalid)
	case c.Name == "in-cluster" || strings.TrimSuffix(c.Server, "/") == appspec.InClusterServer:
		return fmt.Errorf("%w: in-cluster is built in", ErrInvalid)
	case (c.CertData == "") != (c.KeyData == ""):
		return fmt.Errorf("%w: certData and keyData go together", ErrInvalid)
	case c.BearerToken != "" && c.KeyData != "":
		return fmt.Errorf("%w: set bearerToken or a client certificate, not both", ErrInvalid)
	case c.TaskQueue != "" && !validTaskQueue(c.TaskQueue):
		return fmt.Errorf("%w: taskQueue %q: use 1 to 200 letters, digits, '.', '_' or '-'", ErrInvalid, c.TaskQueue)
	}
	for k, v := range c.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("%w: label key %q: %s", ErrInvalid, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("%w: label %s value %q: %s", ErrInvalid, k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

// RESTConfig is the client configuration of the cluster.
func (c Cluster) RESTConfig() *rest.Config {
	return &rest.Config{Host: c.Server, BearerToken: c.BearerToken, TLSClientConfig: rest.TLSClientConfig{
		CAData: []byte(c.CAData), CertData: []byte(c.CertData), KeyData: []byte(c.KeyData), Insecure: c.Insecure,
	}}
}

// ClusterFromKubeconfig reads a context of a kubeconfig ("" for its
// current context) into a Cluster named name (default: the context's).
func ClusterFromKubeconfig(kubeconfig []byte, contextName, name string) (Cluster, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return Cluster{}, fmt.Errorf("%w: kubeconfig: %w", ErrInvalid, err)
	}
	if contextName == "" {
		contextName = raw.CurrentContext
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, contextName, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return Cluster{}, fmt.Errorf("%w: kubeconfig context %q: %w", ErrInvalid, contextName, err)
	}
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return Cluster{}, fmt.Errorf("%w: kubeconfig context %q uses an exec or auth plugin; register a token or a client certificate", ErrInvalid, contextName)
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return Cluster{}, fmt.Errorf("%w: kubeconfig context %q refers to files that cannot be read here (flatten it: kubectl config view --flatten --minify): %w", ErrInvalid, contextName, err)
	}
	if cfg.BearerToken == "" && cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return Cluster{}, fmt.Errorf("%w: kubeconfig context %q: token file: %w", ErrInvalid, contextName, err)
		}
		cfg.BearerToken = strings.TrimSpace(string(b))
	}
	if name == "" {
		name = contextName
	}
	return Cluster{Name: name, Server: cfg.Host, BearerToken: cfg.BearerToken, CAData: string(cfg.CAData),
		CertData: string(cfg.CertData), KeyData: string(cfg.KeyData), Insecure: cfg.Insecure}, nil
}

// PutCluster registers or replaces a cluster.
func (s *Store) PutCluster(ctx context.Context, c Cluster) error {
	if err := c.Validate(); err != nil {
		return err
	}
	data := map[string][]byte{"name": []byte(c.Name), "server": []byte(c.Server), "bearerToken": []byte(c.BearerToken),
		"caData": []byte(c.CAData), "certData": []byte(c.CertData), "keyData": []byte(c.KeyData),
		"insecure": []byte(strconv.FormatBool(c.Insecure)), "taskQueue": []byte(c.TaskQueue)}
	if len(c.Labels) > 0 {
		labels, err := json.Marshal(c.Labels)
		if err != nil {
			return fmt.Errorf("store cluster %s: %w", c.Name, err)
		}
		data["labels"] = labels
	}
	if err := s.s.Put(ctx, prefixCluster+c.Name, data); err != nil {
		return fmt.Errorf("store cluster %s: %w", c.Name, err)
	}
	return nil
}

func clusterFrom(d map[string][]byte) Cluster {
	insecure, _ := strconv.ParseBool(string(d["insecure"]))
	var labels map[string]string
	_ = json.Unmarshal(d["labels"], &labels) // absent or unreadable: no labels
	return Cluster{Labels: labels, Name: string(d["name"]), Server: string(d["server"]), BearerToken: string(d["bearerToken"]),
		CAData: string(d["caData"]), CertData: string(d["certData"]), KeyData: string(d["keyData"]), Insecure: insecure,
		TaskQueue: string(d["taskQueue"])}
}

// Clusters lists the registered clusters, with their secrets.
func (s *Store) Clusters(ctx context.Context) ([]Cluster, error) {
	names, err := s.s.List(ctx, prefixCluster)
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	out := make([]Cluster, 0, len(names))
	for _, n := range names {
		d, err := s.s.Get(ctx, n)
		if errors.Is(err, secretstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("load cluster: %w", err)
		}
		out = append(out, clusterFrom(d))
	}
	return out, nil
}

// DeleteCluster forgets a cluster.
func (s *Store) DeleteCluster(ctx context.Context, name string) error {
	err := s.s.Delete(ctx, prefixCluster+name)
	if errors.Is(err, secretstore.ErrNotFound) {
		return fmt.Errorf("cluster %s: %w", name, ErrNotFound)
	}
	return err
}

// ClusterConfig resolves a destination server (its URL, or a registered
// name) to its client configuration, for kube.Factory.
func (s *Store) ClusterConfig(ctx context.Context, server string) (*rest.Config, error) {
	c, err := s.cluster(ctx, server)
	if err != nil {
		return nil, err
	}
	return c.RESTConfig(), nil
}

// cluster finds a registered cluster by server URL or name.
func (s *Store) cluster(ctx context.Context, server string) (Cluster, error) {
	list, err := s.Clusters(ctx)
	if err != nil {
		return Cluster{}, err
	}
	want := strings.TrimSuffix(server, "/")
	for _, c := range list {
		if strings.TrimSuffix(c.Server, "/") == want || c.Name == server {
			return c, nil
		}
	}
	return Cluster{}, fmt.Errorf("cluster %s: %w", server, ErrNotFound)
}

// ClusterTaskQueue is the task queue of a destination server's activities:
// the registered cluster's TaskQueue, or "" (the default queue) for the
// in-cluster destination and for servers that are not registered.
func (s *Store) ClusterTaskQueue(ctx context.Context, server string) (string, error) {
	if server == "" || strings.TrimSuffix(server, "/") == appspec.InClusterServer || server == "in-cluster" {
		return "", nil
	}
	c, err := s.cluster(ctx, server)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return c.TaskQueue, err
}

// validTaskQueue accepts the task queue names a cluster may name.
func validTaskQueue(q string) bool {
	if len(q) > 200 {
		return false
	}
	for _, r := range q {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
