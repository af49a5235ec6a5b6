package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/settings"
)

var repoVerbs = []verb{
	{"add", "URL", "register a repository and its credentials (the server tests the connection)", (*cli).repoAdd},
	{"list", "", "list the repositories", (*cli).repoList},
	{"rm", "URL", "remove a repository", (*cli).repoRm},
}

var repoCredsVerbs = []verb{
	{"add", "URL", "store a credential template: every repository under the URL prefix uses it", (*cli).repoCredsAdd},
	{"list", "", "list the credential templates", (*cli).repoCredsList},
	{"rm", "URL", "remove a credential template", (*cli).repoCredsRm},
}

var clusterVerbs = []verb{
	{"add", "", "register a cluster: --name N --server URL [credentials], or --kubeconfig F [--context C]", (*cli).clusterAdd},
	{"list", "", "list the clusters", (*cli).clusterList},
	{"rm", "NAME", "remove a cluster", (*cli).clusterRm},
}

// connectionState is the result of the server's last connection test. The
// server may send it as an object {status, message} or a plain string.
type connectionState struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func (s *connectionState) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &s.Status)
	}
	type plain connectionState
	return json.Unmarshal(b, (*plain)(s))
}

// repoView is a repository as the API shows it: no secrets, only whether
// they are set.
type repoView struct {
	settings.RepositoryView
	ConnectionState connectionState `json:"connectionState"`
}

func (r repoView) credentials() string {
	var c []string
	if r.Username != "" {
		c = append(c, "user "+r.Username)
	}
	for _, k := range []struct {
		set  bool
		name string
	}{{r.HasPassword, "password"}, {r.HasToken, "token"}, {r.HasSSHKey, "ssh key"}, {r.InsecureIgnoreHostKey, "any host key"},
		{r.HasClientCert, "client cert"}, {r.HasCA, "CA"}, {r.Insecure, "insecure TLS"}, {r.Proxy != "", "proxy"},
		{r.GitHubAppID != 0, fmt.Sprintf("GitHub App %d installation %d", r.GitHubAppID, r.GitHubAppInstallationID)}} {
		if k.set {
			c = append(c, k.name)
		}
	}
	return orDash(strings.Join(c, ", "))
}

// fileFlag reads the file a flag names ("" when the flag is not given).
func fileFlag(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	b, err := os.ReadFile(name)
	return string(b), err
}

func (c *cli) repoAdd(ctx context.Context, args []string) error {
	return c.addCredential(ctx, args, "repo add", "/api/v1/repositories", "repository")
}

func (c *cli) repoCredsAdd(ctx context.Context, args []string) error {
	return c.addCredential(ctx, args, "repocreds add", "/api/v1/repocreds", "credential template")
}

// addCredential posts a repository, or a credential template (URL a
// prefix, no project), with its credential flags.
func (c *cli) addCredential(ctx context.Context, args []string, cmd, path, what string) error {
	f := c.flags(cmd, "URL").withOutput()
	var req settings.Repository
	f.StringVar(&req.Username, "username", "", "user name for HTTPS (with --password-stdin)")
	pwStdin := f.Bool("password-stdin", false, "read the password from stdin (without echo on a terminal)")
	tokStdin := f.Bool("bearer-token-stdin", false, "read a bearer token for HTTPS from stdin")
	keyPath := f.String("ssh-private-key-path", "", "file of the SSH private key")
	knownHosts := f.String("known-hosts-path", "", "known_hosts file to check the SSH host key against")
	if what == "repository" {
		f.StringVar(&req.Project, "project", "", "only this project's apps may use the repository")
	}
	f.BoolVar(&req.InsecureIgnoreHostKey, "insecure-ignore-host-key", false, "accept any SSH host key")
	f.StringVar(&req.Type, "type", "", "git (default), helm (a Helm chart repository, http(s):// or oci://) or oci (an OCI source, oci://)")
	certPath := f.String("tls-client-cert-path", "", "PEM file of a TLS client certificate (with --tls-client-cert-key-path)")
	certKeyPath := f.String("tls-client-cert-key-path", "", "PEM file of the client certificate's key")
	caPath := f.String("ca-path", "", "PEM file of CA certificates to trust for the server, besides the system's")
	f.BoolVar(&req.Insecure, "insecure-skip-tls-verify", false, "do not verify the server's TLS certificate (tests only)")
	f.StringVar(&req.Proxy, "proxy", "", "HTTP(S) proxy URL")
	f.StringVar(&req.NoProxy, "no-proxy", "", "comma-separated hosts, domains and CIDRs reached without the proxy")
	f.BoolVar(&req.PassCredentials, "pass-credentials", false, "Helm: send the credential also to chart URLs on other hosts")
	f.Int64Var(&req.GitHubAppID, "github-app-id", 0, "ID of the GitHub App that reads the repository (with --github-app-installation-id and --github-app-private-key-path)")
	f.Int64Var(&req.GitHubAppInstallationID, "github-app-installation-id", 0, "ID of the GitHub App's installation")
	appKeyPath := f.String("github-app-private-key-path", "", "PEM file of the GitHub App's private key")
	f.StringVar(&req.GitHubAppEnterpriseBaseURL, "github-app-enterprise-base-url", "", "GitHub Enterprise Server's API, https://HOST/api/v3 (default: github.com)")
	upsert := f.Bool("upsert", false, "replace the credentials if the URL is registered")
	pos, s, err := f.start(args, 1)
	if err != nil {
		return err
	}
	if err := f.exclusive("password-stdin", "bearer-token-stdin", "ssh-private-key-path", "github-app-private-key-path"); err != nil {
		return err
	}
	if (req.GitHubAppID != 0 || req.GitHubAppInstallationID != 0 || *appKeyPath != "" || req.GitHubAppEnterpriseBaseURL != "") &&
		(req.GitHubAppID == 0 || req.GitHubAppInstallationID == 0 || *appKeyPath == "") {
		return f.usageError("--github-app-id, --github-app-installation-id and --github-app-private-key-path go together")
	}
	if (req.Username != "") != *pwStdin {
		return f.usageError("--username and --password-stdin go together")
	}
	if *knownHosts != "" && *keyPath == "" {
		return f.usageError("--known-hosts-path needs --ssh-private-key-path")
	}
	if (*certPath == "") != (*certKeyPath == "") {
		return f.usageError("--tls-client-cert-path and --tls-client-cert-key-path go together")
	}
	req.URL = pos[0]
	switch {
	case *pwStdin:
		req.Password, err = c.readSecret("Password: ")
	case *tokStdin:
		req.BearerToken, err = c.readSecret("Bearer token: ")
	}
	if err != nil {
		return err
	}
	for _, in := range []struct {
		dst  *string
		file string
	}{{&req.SSHPrivateKey, *keyPath}, {&req.SSHKnownHosts, *knownHosts}, {&req.TLSClientCertData, *certPath},
		{&req.TLSClientCertKey, *certKeyPath}, {&req.CAData, *caPath}, {&req.GitHubAppPrivateKey, *appKeyPath}} {
		if *in.dst, err = fileFlag(in.file); err != nil {
			return err
		}
	}
	q := url.Values{}
	if *upsert {
		q.Set("upsert", "true")
	}
	var repo repoView
	raw, err := s.api.json(ctx, http.MethodPost, path, q, req, &repo)
	if err != nil {
		return fmt.Errorf("add %s %s: %w", what, req.URL, err)
	}
	return f.print(raw, func(w io.Writer) {
		fmt.Fprintf(w, "%s %s added%s\n", what, req.URL, stateSuffix(repo.ConnectionState))
	})
}

// stateSuffix shows a connection state after a message: " (connection
// Successful)".
func stateSuffix(s connectionState) string {
	if s.Status == "" {
		return ""
	}
	if s.Message != "" {
		return fmt.Sprintf(" (connection %s: %s)", s.Status, s.Message)
	}
	return fmt.Sprintf(" (connection %s)", s.Status)
}

func (c *cli) repoList(ctx context.Context, args []string) error {
	return listVerb(ctx, c, args, "repo list", "/api/v1/repositories", "URL\tPROJECT\tCREDENTIALS\tSTATUS\tMESSAGE", func(r repoView) []string {
		return []string{r.URL, orDash(r.Project), r.credentials(), r.ConnectionState.Status, r.ConnectionState.Message}
	})
}

// remove deletes what path names and says so ("repository URL removed").
func (c *cli) remove(ctx context.Context, args []string, cmd, synopsis, what, done string, path func(string) string) error {
	f := c.flags(cmd, synopsis)
	pos, s, err := f.start(args, 1)
	if err != nil {
		return err
	}
	if _, err := s.api.json(ctx, http.MethodDelete, path(pos[0]), nil, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s %s %s\n", what, pos[0], done)
	return nil
}

func (c *cli) repoCredsList(ctx context.Context, args []string) error {
	return listVerb(ctx, c, args, "repocreds list", "/api/v1/repocreds", "URL PREFIX\tTYPE\tCREDENTIALS", func(r repoView) []string {
		return []string{r.URL, orDash(r.Type), r.credentials()}
	})
}

func (c *cli) repoCredsRm(ctx context.Context, args []string) error {
	return c.remove(ctx, args, "repocreds rm", "URL", "credential template", "removed", func(u string) string {
		return "/api/v1/repocreds/" + url.PathEscape(u)
	})
}

func (c *cli) repoRm(ctx context.Context, args []string) error {
	return c.remove(ctx, args, "repo rm", "URL", "repository", "removed", func(u string) string {
		return "/api/v1/repositories/" + url.PathEscape(u)
	})
}

// clusterView is a cluster as the API shows it.
type clusterView struct {
	settings.ClusterView
	ConnectionState connectionState `json:"connectionState"`
}

func (c *cli) clusterAdd(ctx context.Context, args []string) error {
	// --server is the cluster's URL here; --windlass-server is the API's.
	f := c.flagsWithServer("cluster add", "", "windlass-server").withOutput()
	// The cluster, or a kubeconfig file's content and one of its contexts.
	var req struct {
		settings.Cluster
		Kubeconfig string `json:"kubeconfig,omitempty"`
		Context    string `json:"context,omitempty"`
	}
	f.StringVar(&req.Name, "name", "", "the cluster's name (with --kubeconfig, default: the context's)")
	f.StringVar(&req.Server, "server", "", "the cluster's API server URL")
	tokStdin := f.Bool("bearer-token-stdin", false, "read a bearer token from stdin")
	caFile := f.String("ca-file", "", "PEM file of the cluster's CA")
	certFile := f.String("cert-file", "", "PEM file of a client certificate (with --key-file)")
	keyFile := f.String("key-file", "", "PEM file of the client certificate's key")
	f.BoolVar(&req.Insecure, "insecure", false, "do not verify the cluster's TLS certificate")
	f.StringVar(&req.TaskQueue, "task-queue", "", "Temporal task queue of the cluster's activities: only workers with --task-queue Q touch it")
	var labels cmdline.StringList
	f.Var(&labels, "label", "a label of the cluster, KEY=VALUE (repeatable), for ApplicationSet cluster selectors")
	kubeconfig := f.String("kubeconfig", "", "read the server and credentials from this kubeconfig file")
	f.StringVar(&req.Context, "context", "", "the kubeconfig context (default: its current context)")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	if *kubeconfig != "" {
		for _, n := range []string{"server", "bearer-token-stdin", "ca-file", "cert-file", "key-file"} {
			if err := f.exclusive("kubeconfig", n); err != nil {
				return err
			}
		}
	} else {
		if req.Name == "" || req.Server == "" {
			return f.usageError("give --name and --server, or --kubeconfig")
		}
		if req.Context != "" {
			return f.usageError("--context needs --kubeconfig")
		}
		if (*certFile == "") != (*keyFile == "") {
			return f.usageError("--cert-file and --key-file go together")
		}
		if err := f.exclusive("bearer-token-stdin", "cert-file"); err != nil {
			return err
		}
	}
	for _, in := range []struct {
		dst  *string
		file string
	}{{&req.Kubeconfig, *kubeconfig}, {&req.CAData, *caFile}, {&req.CertData, *certFile}, {&req.KeyData, *keyFile}} {
		if *in.dst, err = fileFlag(in.file); err != nil {
			return err
		}
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return f.usageError("--label %q: want KEY=VALUE", l)
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[k] = v
	}
	if *tokStdin {
		if req.BearerToken, err = c.readSecret("Bearer token: "); err != nil {
			return err
		}
	}
	var cl clusterView
	raw, err := s.api.json(ctx, http.MethodPost, "/api/v1/clusters", nil, req, &cl)
	if err != nil {
		return fmt.Errorf("add cluster: %w", err)
	}
	return f.print(raw, func(w io.Writer) {
		fmt.Fprintf(w, "cluster %s added: %s%s\n", cl.Name, cl.Server, stateSuffix(cl.ConnectionState))
	})
}

func (c *cli) clusterList(ctx context.Context, args []string) error {
	return listVerb(ctx, c, args, "cluster list", "/api/v1/clusters", "NAME\tSERVER\tCREDENTIALS\tLABELS\tSTATUS\tMESSAGE", func(cl clusterView) []string {
		return []string{cl.Name, cl.Server, yesNo(cl.HasCredentials), keyValues(cl.Labels), cl.ConnectionState.Status, cl.ConnectionState.Message}
	})
}

func (c *cli) clusterRm(ctx context.Context, args []string) error {
	return c.remove(ctx, args, "cluster rm", "NAME", "cluster", "removed", func(n string) string {
		return "/api/v1/clusters/" + url.PathEscape(n)
	})
}
