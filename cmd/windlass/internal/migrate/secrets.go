package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/settings"
)

// The values of the argocd.argoproj.io/secret-type label.
const (
	typeRepository = "repository"
	typeRepoCreds  = "repo-creds"
	typeCluster    = "cluster"
)

// notYetTypes are Secret types Argo CD has and Windlass does not yet.
var notYetTypes = map[string]string{
	"repository-write": "write credentials of the source hydrator",
	"repo-write-creds": "write credential templates of the source hydrator",
}

// Fields of repository and repo-creds Secrets.
var (
	repoFields = []string{"url", "type", "name", "project", "username", "password", "sshPrivateKey", "bearerToken", "insecureIgnoreHostKey",
		"insecure", "tlsClientCertData", "tlsClientCertKey", "proxy", "noProxy", "enableOCI",
		"githubAppID", "githubAppInstallationID", "githubAppPrivateKey", "githubAppEnterpriseBaseUrl"}
	// repoNotYet hold what Windlass's repositories cannot express yet.
	repoNotYet = []string{"enableLfs", "gcpServiceAccountKey", "forceHttpBasicAuth", "useAzureWorkloadIdentity"}
	// repoIDs are the numeric fields.
	repoIDs       = []string{"githubAppID", "githubAppInstallationID"}
	clusterFields = []string{"name", "server", "config", "shard", "clusterResources"}
)

func field(s corev1.Secret, k string) string { return string(s.Data[k]) }

// isSSH reports whether a repository URL is an SSH one: ssh:// or
// scp-like user@host:path.
func isSSH(u string) bool {
	scheme, _, ok := strings.Cut(u, "://")
	return (ok && scheme == "ssh") || (!ok && strings.Contains(u, "@") && strings.Contains(u, ":"))
}

// checkRepoFields is checkFields for repository and repo-creds Secrets.
func checkRepoFields(s corev1.Secret) string {
	if t := field(s, "type"); t != "" && t != settings.RepoTypeGit && t != settings.RepoTypeHelm && t != settings.RepoTypeOCI {
		return fmt.Sprintf("field type: %q is not git, helm or oci", t)
	}
	for _, k := range repoIDs {
		if v := strings.TrimSpace(field(s, k)); v != "" {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return fmt.Sprintf("field %s: %q is not a number", k, v)
			}
		}
	}
	return checkFields(s, repoFields, repoNotYet)
}

// checkFields returns the reason to refuse a Secret with a field outside
// known, or a set field of notYet; "" when there is none.
func checkFields(s corev1.Secret, known, notYet []string) string {
	for _, k := range sortedKeys(s.Data) {
		v := strings.TrimSpace(field(s, k))
		switch {
		case slices.Contains(known, k):
		case slices.Contains(notYet, k) && !slices.Contains(known, k):
			if v != "" && v != "false" {
				return "field " + k + ": not implemented yet in Windlass"
			}
		default:
			return "field " + k + ": unknown to the migration, which cannot tell what it changes"
		}
	}
	return ""
}

// redact hides a password a URL may hold.
func redact(u string) string {
	if pu, err := url.Parse(u); err == nil && pu.User != nil {
		return pu.Redacted()
	}
	return u
}

// creds are a repository's credentials and transport settings from a
// Secret: insecure is insecureIgnoreHostKey for SSH and no certificate
// check for HTTPS.
type creds struct {
	secret                            string
	username, password, sshKey, token string
	insecureIgnoreHostKey             bool
	certData, certKey                 string
	insecure                          bool
	proxy, noProxy                    string
	// A GitHub App: its IDs, key and GitHub Enterprise API.
	appID, installationID int64
	appKey, appBaseURL    string
}

func credsOf(s corev1.Secret) creds {
	yes := func(k string) bool { return strings.TrimSpace(field(s, k)) == "true" }
	// checkRepoFields refused IDs that are not numbers.
	id := func(k string) int64 { n, _ := strconv.ParseInt(strings.TrimSpace(field(s, k)), 10, 64); return n }
	ssh := isSSH(field(s, "url"))
	return creds{secret: s.Name, username: field(s, "username"), password: field(s, "password"),
		sshKey: field(s, "sshPrivateKey"), token: field(s, "bearerToken"),
		insecureIgnoreHostKey: yes("insecureIgnoreHostKey") || (yes("insecure") && ssh),
		certData:              field(s, "tlsClientCertData"), certKey: field(s, "tlsClientCertKey"),
		insecure: yes("insecure") && !ssh, proxy: field(s, "proxy"), noProxy: field(s, "noProxy"),
		appID: id("githubAppID"), installationID: id("githubAppInstallationID"),
		appKey: field(s, "githubAppPrivateKey"), appBaseURL: strings.TrimSpace(field(s, "githubAppEnterpriseBaseUrl"))}
}

func (c creds) empty() bool {
	return c.username == "" && c.password == "" && c.sshKey == "" && c.token == "" && c.certData == "" &&
		!c.insecure && c.proxy == "" && c.appID == 0 && c.installationID == 0 && c.appKey == ""
}

// apply sets c on r.
func (c creds) apply(r *settings.Repository) {
	r.Username, r.Password, r.SSHPrivateKey, r.BearerToken = c.username, c.password, c.sshKey, c.token
	r.InsecureIgnoreHostKey = c.insecureIgnoreHostKey
	r.TLSClientCertData, r.TLSClientCertKey, r.Insecure = c.certData, c.certKey, c.insecure
	r.Proxy, r.NoProxy = c.proxy, c.noProxy
	r.GitHubAppID, r.GitHubAppInstallationID, r.GitHubAppPrivateKey, r.GitHubAppEnterpriseBaseURL = c.appID, c.installationID, c.appKey, c.appBaseURL
}

// repoURLOf is a Secret's URL in Windlass's terms: Argo CD writes a Helm
// OCI registry without its scheme and sets enableOCI.
func repoURLOf(s corev1.Secret) string {
	u := field(s, "url")
	if strings.TrimSpace(field(s, "enableOCI")) == "true" && !strings.Contains(u, "://") {
		return "oci://" + u
	}
	return u
}

// repoTypeOf is a Secret's type; an OCI URL with type helm is a chart
// registry, and one without a type an OCI source.
func repoTypeOf(s corev1.Secret) string {
	t := field(s, "type")
	if t == settings.RepoTypeGit && strings.HasPrefix(repoURLOf(s), "oci://") {
		return ""
	}
	return t
}

// template is a repo-creds Secret: credentials for every repository
// under its URL prefix.
type template struct {
	creds
	prefix string
}

// repos plans the repository and repo-creds Secrets, and those of types
// Windlass does not know.
func (b *builder) repos(ctx context.Context) error {
	views, err := b.cur.Repos(ctx)
	if err != nil {
		return fmt.Errorf("list repositories: %w", err)
	}
	registered := map[string]settings.RepositoryView{}
	for _, v := range views {
		registered[settings.CanonicalRepoURL(v.URL)] = v
	}
	tmplViews, err := b.cur.RepoCreds(ctx)
	if err != nil {
		return fmt.Errorf("list credential templates: %w", err)
	}
	registeredTmpls := map[string]settings.RepositoryView{}
	for _, v := range tmplViews {
		registeredTmpls[v.URL] = v
	}

	// Credential templates first: repositories take theirs from them.
	var templates []*template
	for _, s := range b.src.Secrets {
		if s.Labels[SecretTypeLabel] != typeRepoCreds {
			continue
		}
		if r := checkRepoFields(s); r != "" {
			b.plan.add("RepoCreds", s.Name, ActionRefuse, r, nil)
			continue
		}
		t := &template{creds: credsOf(s), prefix: repoURLOf(s)}
		templates = append(templates, t)
		b.putRepoCreds(s, t, registeredTmpls)
	}
	// longest finds the template of a URL: the longest prefix, as Argo CD.
	longest := func(u string) *template {
		var best *template
		for _, t := range templates {
			if t.prefix != "" && strings.HasPrefix(u, t.prefix) && (best == nil || len(t.prefix) > len(best.prefix)) {
				best = t
			}
		}
		return best
	}

	secretURLs := map[string]bool{}
	for _, s := range b.src.Secrets {
		typ := s.Labels[SecretTypeLabel]
		switch typ {
		case typeRepository:
			secretURLs[settings.CanonicalRepoURL(field(s, "url"))] = true
			b.repoRow(s, longest, registered)
		case typeRepoCreds, typeCluster:
		default:
			if what, ok := notYetTypes[typ]; ok {
				b.plan.add("Secret", s.Name, ActionRefuse, fmt.Sprintf("secret-type %q: not implemented yet: %s", typ, what), nil)
			} else {
				b.plan.add("Secret", s.Name, ActionRefuse, fmt.Sprintf("unknown secret-type %q: want repository, repo-creds or cluster", typ), nil)
			}
		}
	}
	// Repositories that only apps name need nothing: the templates
	// registered above serve them, as in Argo CD.
	return nil
}

// repoRow plans a repository Secret.
func (b *builder) repoRow(s corev1.Secret, longest func(string) *template, registered map[string]settings.RepositoryView) {
	if r := checkRepoFields(s); r != "" {
		b.plan.add("Repository", s.Name, ActionRefuse, r, nil)
		return
	}
	u := repoURLOf(s)
	c := credsOf(s)
	if t := field(s, "type"); (t == settings.RepoTypeHelm || t == settings.RepoTypeOCI) && c.empty() && longest(u) == nil && field(s, "project") == "" {
		b.plan.add("Repository", s.Name, ActionSkip, t+" repository "+redact(u)+" without credentials: apps use it without registration", nil)
		return
	}
	var from *template
	if c.empty() {
		from = longest(u)
	}
	reason := redact(u)
	if from != nil {
		reason += "; credentials from repo-creds " + from.secret
	}
	b.putRepo("Repository", s.Name, settings.Repository{URL: u, Type: repoTypeOf(s), Project: field(s, "project")}, templateOr(from, c), registered, reason)
}

func templateOr(t *template, c creds) *template {
	if t != nil {
		return t
	}
	return &template{creds: c}
}

// putRepo plans registering r with the credentials of t.
func (b *builder) putRepo(kind, name string, r settings.Repository, t *template, registered map[string]settings.RepositoryView, reason string) {
	if t != nil {
		t.apply(&r)
	}
	if r.SSHPrivateKey != "" && !r.InsecureIgnoreHostKey {
		r.SSHKnownHosts = b.src.KnownHosts
	}
	if err := r.Validate(); err != nil {
		b.plan.add(kind, name, ActionRefuse, err.Error(), nil)
		return
	}
	old, exists := registered[settings.CanonicalRepoURL(r.URL)]
	switch {
	case !exists:
		b.plan.add(kind, name, ActionCreate, reason, func(ctx context.Context, w Writer) error { return w.PutRepo(ctx, r, false) })
	case old == r.View():
		b.plan.add(kind, name, ActionUnchanged, reason+"; registered (secret values are not compared)", nil)
	default:
		b.plan.add(kind, name, ActionUpdate, reason+"; registered with other credentials", func(ctx context.Context, w Writer) error { return w.PutRepo(ctx, r, true) })
	}
}

// putRepoCreds plans registering the repo-creds Secret s as a
// credential template (repocred) for its URL prefix.
func (b *builder) putRepoCreds(s corev1.Secret, t *template, registered map[string]settings.RepositoryView) {
	r := settings.Repository{URL: t.prefix, Type: repoTypeOf(s)}
	t.apply(&r)
	if r.SSHPrivateKey != "" && !r.InsecureIgnoreHostKey {
		r.SSHKnownHosts = b.src.KnownHosts
	}
	if err := r.Validate(); err != nil {
		b.plan.add("RepoCreds", s.Name, ActionRefuse, err.Error(), nil)
		return
	}
	reason := "credential template for " + redact(t.prefix)
	old, exists := registered[r.URL]
	switch {
	case !exists:
		b.plan.add("RepoCreds", s.Name, ActionCreate, reason, func(ctx context.Context, w Writer) error { return w.PutRepoCreds(ctx, r, false) })
	case old == r.View():
		b.plan.add("RepoCreds", s.Name, ActionUnchanged, reason+"; registered (secret values are not compared)", nil)
	default:
		b.plan.add("RepoCreds", s.Name, ActionUpdate, reason+"; registered with other credentials", func(ctx context.Context, w Writer) error { return w.PutRepoCreds(ctx, r, true) })
	}
}

// argoClusterConfig is the config field of a cluster Secret.
type argoClusterConfig struct {
	Username           string          `json:"username"`
	Password           string          `json:"password"`
	BearerToken        string          `json:"bearerToken"`
	TLSClientConfig    argoTLS         `json:"tlsClientConfig"`
	AWSAuthConfig      json.RawMessage `json:"awsAuthConfig"`
	ExecProviderConfig json.RawMessage `json:"execProviderConfig"`
	ProxyURL           string          `json:"proxyUrl"`
	DisableCompression bool            `json:"disableCompression"`
}

type argoTLS struct {
	Insecure   bool   `json:"insecure"`
	ServerName string `json:"serverName"`
	CAData     []byte `json:"caData"`
	CertData   []byte `json:"certData"`
	KeyData    []byte `json:"keyData"`
}

// clusterOf converts a cluster Secret, or says why it cannot.
func clusterOf(s corev1.Secret) (settings.Cluster, string) {
	for _, k := range []string{"namespaces", "project"} {
		if strings.TrimSpace(field(s, k)) != "" {
			return settings.Cluster{}, "field " + k + ": not implemented yet in Windlass (clusters are not scoped to namespaces or projects)"
		}
	}
	if r := checkFields(s, slices.Concat(clusterFields, []string{"namespaces", "project"}), nil); r != "" {
		return settings.Cluster{}, r
	}
	var cfg argoClusterConfig
	if c := bytes.TrimSpace(s.Data["config"]); len(c) > 0 {
		d := json.NewDecoder(bytes.NewReader(c))
		d.DisallowUnknownFields()
		if err := d.Decode(&cfg); err != nil {
			// json's errors name the field, never the value.
			return settings.Cluster{}, "field config: " + err.Error()
		}
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"username", cfg.Username != ""}, {"password", cfg.Password != ""}, {"awsAuthConfig", len(cfg.AWSAuthConfig) > 0},
		{"execProviderConfig", len(cfg.ExecProviderConfig) > 0}, {"proxyUrl", cfg.ProxyURL != ""}, {"tlsClientConfig.serverName", cfg.TLSClientConfig.ServerName != ""}} {
		if f.set {
			return settings.Cluster{}, "field config." + f.name + ": not implemented yet in Windlass"
		}
	}
	return settings.Cluster{Name: field(s, "name"), Server: field(s, "server"), BearerToken: cfg.BearerToken,
		CAData: string(cfg.TLSClientConfig.CAData), CertData: string(cfg.TLSClientConfig.CertData),
		KeyData: string(cfg.TLSClientConfig.KeyData), Insecure: cfg.TLSClientConfig.Insecure, Labels: clusterLabels(s.Labels)}, ""
}

// clusterLabels are a cluster Secret's labels but its type: what Argo CD's
// cluster generator selects on.
func clusterLabels(l map[string]string) map[string]string {
	out := maps.Clone(l)
	delete(out, SecretTypeLabel)
	if len(out) == 0 {
		return nil
	}
	return out
}

// sameView says whether two cluster views are equal.
func sameView(a, b settings.ClusterView) bool {
	return a.Name == b.Name && a.Server == b.Server && a.HasCredentials == b.HasCredentials && a.Insecure == b.Insecure &&
		a.TaskQueue == b.TaskQueue && maps.Equal(a.Labels, b.Labels)
}

// clusters plans the cluster Secrets.
func (b *builder) clusters(ctx context.Context) error {
	views, err := b.cur.Clusters(ctx)
	if err != nil {
		return fmt.Errorf("list clusters: %w", err)
	}
	for _, s := range b.src.Secrets {
		if s.Labels[SecretTypeLabel] != typeCluster {
			continue
		}
		c, refuse := clusterOf(s)
		if refuse != "" {
			b.plan.add("Cluster", s.Name, ActionRefuse, refuse, nil)
			continue
		}
		if c.Name == "in-cluster" || strings.TrimSuffix(c.Server, "/") == appspec.InClusterServer {
			b.plan.add("Cluster", s.Name, ActionSkip, "in-cluster is built into Windlass", nil)
			continue
		}
		if err := c.Validate(); err != nil {
			b.plan.add("Cluster", s.Name, ActionRefuse, err.Error(), nil)
			continue
		}
		reason := c.Name + " at " + c.Server
		i := slices.IndexFunc(views, func(v settings.ClusterView) bool { return v.Name == c.Name })
		switch {
		case i < 0:
			b.plan.add("Cluster", s.Name, ActionCreate, reason, func(ctx context.Context, w Writer) error { return w.PutCluster(ctx, c, false) })
		case sameView(views[i], c.View()):
			b.plan.add("Cluster", s.Name, ActionUnchanged, reason+"; registered (secret values are not compared)", nil)
		default:
			b.plan.add("Cluster", s.Name, ActionUpdate, reason+"; registered differently", func(ctx context.Context, w Writer) error { return w.PutCluster(ctx, c, true) })
		}
	}
	return nil
}
