package settings

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/ghapp"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Repository types: a Git repository (the default), a Helm chart
// repository (HTTP, or an oci:// registry) or an OCI source (an oci://
// repository of plain artifacts).
const (
	RepoTypeGit  = "git"
	RepoTypeHelm = "helm"
	RepoTypeOCI  = "oci"
)

// Repository is a registered repository with its credential. The secret
// fields are write-only: View drops them. A credential template
// (PutRepoCreds) has the same fields; its URL is a prefix that any
// repository under it matches, and it has no project.
type Repository struct {
	URL string `json:"url"`
	// Type is git (the default), helm or oci.
	Type string `json:"type,omitempty"`
	// Project, when set, allows only that project's apps to use the
	// repository.
	Project string `json:"project,omitempty"`
	// Username and Password (or a token as the password) for HTTPS.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// BearerToken is sent as "Authorization: Bearer".
	BearerToken string `json:"bearerToken,omitempty"`
	// SSHPrivateKey (PEM) for SSH URLs, checked against SSHKnownHosts
	// (known_hosts lines) unless InsecureIgnoreHostKey.
	SSHPrivateKey         string `json:"sshPrivateKey,omitempty"`
	SSHKnownHosts         string `json:"sshKnownHosts,omitempty"`
	InsecureIgnoreHostKey bool   `json:"insecureIgnoreHostKey,omitempty"`
	// TLSClientCertData and TLSClientCertKey (PEM) are a client
	// certificate for HTTPS; the key is a secret.
	TLSClientCertData string `json:"tlsClientCertData,omitempty"`
	TLSClientCertKey  string `json:"tlsClientCertKey,omitempty"`
	// CAData (PEM) is trusted for the server's certificate, besides the
	// system roots.
	CAData string `json:"caData,omitempty"`
	// Insecure skips the server's certificate check: tests only.
	Insecure bool `json:"insecure,omitempty"`
	// Proxy is the HTTP(S) proxy URL; NoProxy lists the hosts, domains
	// (.example.com) and CIDRs reached directly, comma-separated.
	Proxy   string `json:"proxy,omitempty"`
	NoProxy string `json:"noProxy,omitempty"`
	// PassCredentials sends a Helm repository's credential also to
	// chart URLs on other hosts than the repository's.
	PassCredentials bool `json:"passCredentials,omitempty"`
	// A GitHub App credential for HTTPS Git: the app's ID, its
	// installation's ID and its private key (PEM, a secret) become
	// installation tokens. GitHubAppEnterpriseBaseURL is GitHub
	// Enterprise Server's API (https://ghe.example.com/api/v3).
	GitHubAppID                int64  `json:"githubAppID,omitempty"`
	GitHubAppInstallationID    int64  `json:"githubAppInstallationID,omitempty"`
	GitHubAppPrivateKey        string `json:"githubAppPrivateKey,omitempty"`
	GitHubAppEnterpriseBaseURL string `json:"githubAppEnterpriseBaseUrl,omitempty"`
}

// GitHubApp is the repository's GitHub App credential, nil when it has
// none.
func (r Repository) GitHubApp() *ghapp.App {
	if !r.hasGitHubApp() {
		return nil
	}
	return &ghapp.App{EnterpriseBaseURL: r.GitHubAppEnterpriseBaseURL, AppID: r.GitHubAppID,
		InstallationID: r.GitHubAppInstallationID, PrivateKey: r.GitHubAppPrivateKey}
}

func (r Repository) hasGitHubApp() bool {
	return r.GitHubAppID != 0 || r.GitHubAppInstallationID != 0 || r.GitHubAppPrivateKey != "" || r.GitHubAppEnterpriseBaseURL != ""
}

// RepositoryView is what the API shows of a repository: never a secret,
// only whether one is set.
type RepositoryView struct {
	URL                   string `json:"url"`
	Type                  string `json:"type,omitempty"`
	Project               string `json:"project,omitempty"`
	Username              string `json:"username,omitempty"`
	HasPassword           bool   `json:"hasPassword"`
	HasToken              bool   `json:"hasToken"`
	HasSSHKey             bool   `json:"hasSSHKey"`
	InsecureIgnoreHostKey bool   `json:"insecureIgnoreHostKey,omitempty"`
	// HasClientCert: a TLS client certificate is set. The certificate
	// and CA are not secret, but they are long: the view only says so.
	HasClientCert   bool   `json:"hasClientCert,omitempty"`
	HasCA           bool   `json:"hasCA,omitempty"`
	Insecure        bool   `json:"insecure,omitempty"`
	Proxy           string `json:"proxy,omitempty"`
	NoProxy         string `json:"noProxy,omitempty"`
	PassCredentials bool   `json:"passCredentials,omitempty"`
	// The GitHub App's IDs and API; its key is only said to be set.
	GitHubAppID                int64  `json:"githubAppID,omitempty"`
	GitHubAppInstallationID    int64  `json:"githubAppInstallationID,omitempty"`
	HasGitHubAppPrivateKey     bool   `json:"hasGithubAppPrivateKey,omitempty"`
	GitHubAppEnterpriseBaseURL string `json:"githubAppEnterpriseBaseUrl,omitempty"`
}

// View drops the secrets, also a password in a URL stored before Validate
// refused them.
func (r Repository) View() RepositoryView {
	return RepositoryView{URL: redactURL(r.URL), Type: r.Type, Project: r.Project, Username: r.Username, HasPassword: r.Password != "",
		HasToken: r.BearerToken != "", HasSSHKey: r.SSHPrivateKey != "", InsecureIgnoreHostKey: r.InsecureIgnoreHostKey,
		HasClientCert: r.TLSClientCertData != "", HasCA: r.CAData != "", Insecure: r.Insecure,
		Proxy: redactURL(r.Proxy), NoProxy: r.NoProxy, PassCredentials: r.PassCredentials,
		GitHubAppID: r.GitHubAppID, GitHubAppInstallationID: r.GitHubAppInstallationID,
		HasGitHubAppPrivateKey: r.GitHubAppPrivateKey != "", GitHubAppEnterpriseBaseURL: redactURL(r.GitHubAppEnterpriseBaseURL)}
}

// Validate checks the repository.
func (r Repository) Validate() error {
	switch {
	case r.URL == "":
		return fmt.Errorf("%w: url is required", ErrInvalid)
	case strings.ContainsAny(r.URL, " \t\n"):
		return fmt.Errorf("%w: url contains white space", ErrInvalid)
	case r.Password != "" && r.BearerToken != "":
		return fmt.Errorf("%w: set password or bearerToken, not both", ErrInvalid)
	case r.SSHPrivateKey != "" && r.BearerToken != "":
		return fmt.Errorf("%w: bearerToken is for HTTPS, not SSH", ErrInvalid)
	case r.Type != "" && r.Type != RepoTypeGit && r.Type != RepoTypeHelm && r.Type != RepoTypeOCI:
		return fmt.Errorf("%w: type must be git, helm or oci, not %q", ErrInvalid, r.Type)
	case (r.TLSClientCertData == "") != (r.TLSClientCertKey == ""):
		return fmt.Errorf("%w: set both tlsClientCertData and tlsClientCertKey, or neither", ErrInvalid)
	case appspec.RepoURLHasPassword(r.URL):
		// The URL is stored and shown as it is; the message must not echo it.
		return fmt.Errorf("%w: url holds a password: use the username and password (or bearerToken) fields, which are stored as secrets", ErrInvalid)
	}
	switch {
	case r.Type == RepoTypeOCI, r.Type == "" && strings.HasPrefix(r.URL, "oci://"):
		// An untyped oci:// URL serves OCI sources and Helm charts alike.
		if !strings.HasPrefix(r.URL, "oci://") {
			return fmt.Errorf("%w: url: an OCI repository is oci://registry/repository", ErrInvalid)
		}
	case r.Type != RepoTypeHelm:
		if err := appspec.CheckRepoTransport(r.URL); err != nil {
			return fmt.Errorf("%w: url: %w", ErrInvalid, err)
		}
	case !strings.HasPrefix(r.URL, "https://") && !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "oci://"):
		return fmt.Errorf("%w: url: a Helm repository is http(s):// or oci://", ErrInvalid)
	}
	if err := r.validateGitHubApp(); err != nil {
		return err
	}
	return r.validateTLS()
}

// validateGitHubApp checks a GitHub App credential: HTTPS Git only,
// alone, complete, and with an RSA key. The error names the field.
func (r Repository) validateGitHubApp() error {
	if !r.hasGitHubApp() {
		return nil
	}
	fieldErr := func(field, reason string) error {
		return fmt.Errorf("%w: %w", ErrInvalid, &appspec.FieldError{Field: field, Reason: reason})
	}
	switch {
	case r.Type == RepoTypeHelm || r.Type == RepoTypeOCI || strings.HasPrefix(r.URL, "oci://"):
		return fieldErr("githubAppID", "a GitHub App credential is for Git repositories only")
	case !strings.HasPrefix(r.URL, "https://") && !strings.HasPrefix(r.URL, "http://"):
		return fieldErr("url", "a GitHub App credential is for https:// repository URLs")
	case r.Password != "" || r.BearerToken != "" || r.SSHPrivateKey != "":
		return fieldErr("githubAppPrivateKey", "set a GitHub App or a password, bearer token or SSH key, not both")
	}
	if field, err := r.GitHubApp().Validate(); err != nil {
		return fieldErr(field, err.Error())
	}
	return nil
}

// validateTLS checks the PEM fields and the proxy, with messages that
// never echo a key.
func (r Repository) validateTLS() error {
	if r.TLSClientCertData != "" {
		if _, err := tls.X509KeyPair([]byte(r.TLSClientCertData), []byte(r.TLSClientCertKey)); err != nil {
			return fmt.Errorf("%w: tlsClientCertData and tlsClientCertKey are not a PEM certificate and its key", ErrInvalid)
		}
	}
	if r.CAData != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(r.CAData)) {
		return fmt.Errorf("%w: caData holds no PEM certificate", ErrInvalid)
	}
	if r.Proxy != "" {
		u, err := url.Parse(r.Proxy)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
			return fmt.Errorf("%w: proxy must be an http://, https:// or socks5:// URL", ErrInvalid)
		}
	}
	return nil
}

// redactURL hides a password in u, which callers may have typed.
func redactURL(u string) string {
	if !appspec.RepoURLHasPassword(u) {
		return u
	}
	if pu, err := url.Parse(u); err == nil {
		return pu.Redacted()
	}
	return "(a URL with a password)"
}

// CanonicalRepoURL trims what does not name a different repository: a
// trailing slash and ".git".
func CanonicalRepoURL(u string) string {
	return strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
}

// PutRepo registers or replaces a repository.
func (s *Store) PutRepo(ctx context.Context, r Repository) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.s.Put(ctx, key(prefixRepo, CanonicalRepoURL(r.URL)), r.data()); err != nil {
		return fmt.Errorf("store repository %s: %w", redactURL(r.URL), err)
	}
	return nil
}

func (r Repository) data() map[string][]byte {
	return map[string][]byte{
		"url": []byte(r.URL), "type": []byte(r.Type), "project": []byte(r.Project), "username": []byte(r.Username),
		"password": []byte(r.Password), "bearerToken": []byte(r.BearerToken),
		"sshPrivateKey": []byte(r.SSHPrivateKey), "sshKnownHosts": []byte(r.SSHKnownHosts),
		"insecureIgnoreHostKey": []byte(strconv.FormatBool(r.InsecureIgnoreHostKey)),
		"tlsClientCertData":     []byte(r.TLSClientCertData), "tlsClientCertKey": []byte(r.TLSClientCertKey),
		"caData": []byte(r.CAData), "insecure": []byte(strconv.FormatBool(r.Insecure)),
		"proxy": []byte(r.Proxy), "noProxy": []byte(r.NoProxy),
		"passCredentials":         []byte(strconv.FormatBool(r.PassCredentials)),
		"githubAppID":             []byte(formatID(r.GitHubAppID)),
		"githubAppInstallationID": []byte(formatID(r.GitHubAppInstallationID)),
		"githubAppPrivateKey":     []byte(r.GitHubAppPrivateKey), "githubAppEnterpriseBaseUrl": []byte(r.GitHubAppEnterpriseBaseURL),
	}
}

// formatID is an ID as stored, "" for none.
func formatID(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// Repo returns a registered repository.
func (s *Store) Repo(ctx context.Context, url string) (Repository, error) {
	data, err := s.s.Get(ctx, key(prefixRepo, CanonicalRepoURL(url)))
	if errors.Is(err, secretstore.ErrNotFound) {
		return Repository{}, fmt.Errorf("repository %s: %w", redactURL(url), ErrNotFound)
	}
	if err != nil {
		return Repository{}, fmt.Errorf("load repository %s: %w", redactURL(url), err)
	}
	return repoFrom(data), nil
}

func repoFrom(d map[string][]byte) Repository {
	flag := func(k string) bool { b, _ := strconv.ParseBool(string(d[k])); return b }
	id := func(k string) int64 { n, _ := strconv.ParseInt(string(d[k]), 10, 64); return n }
	return Repository{URL: string(d["url"]), Type: string(d["type"]), Project: string(d["project"]), Username: string(d["username"]),
		Password: string(d["password"]), BearerToken: string(d["bearerToken"]), SSHPrivateKey: string(d["sshPrivateKey"]),
		SSHKnownHosts: string(d["sshKnownHosts"]), InsecureIgnoreHostKey: flag("insecureIgnoreHostKey"),
		TLSClientCertData: string(d["tlsClientCertData"]), TLSClientCertKey: string(d["tlsClientCertKey"]),
		CAData: string(d["caData"]), Insecure: flag("insecure"), Proxy: string(d["proxy"]), NoProxy: string(d["noProxy"]),
		PassCredentials: flag("passCredentials"), GitHubAppID: id("githubAppID"), GitHubAppInstallationID: id("githubAppInstallationID"),
		GitHubAppPrivateKey: string(d["githubAppPrivateKey"]), GitHubAppEnterpriseBaseURL: string(d["githubAppEnterpriseBaseUrl"])}
}

// Repos lists the registered repositories, with their secrets.
func (s *Store) Repos(ctx context.Context) ([]Repository, error) {
	return s.listRepos(ctx, prefixRepo)
}

func (s *Store) listRepos(ctx context.Context, prefix string) ([]Repository, error) {
	names, err := s.s.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list repositories: %w", err)
	}
	out := make([]Repository, 0, len(names))
	for _, n := range names {
		d, err := s.s.Get(ctx, n)
		if errors.Is(err, secretstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("load repository: %w", err)
		}
		out = append(out, repoFrom(d))
	}
	return out, nil
}

// DeleteRepo forgets a repository and its credential.
func (s *Store) DeleteRepo(ctx context.Context, url string) error {
	err := s.s.Delete(ctx, key(prefixRepo, CanonicalRepoURL(url)))
	if errors.Is(err, secretstore.ErrNotFound) {
		return fmt.Errorf("repository %s: %w", redactURL(url), ErrNotFound)
	}
	return err
}

// ForeignRepos are the canonical URLs of the repositories registered for
// another project than project, sorted: its apps may not use them.
func ForeignRepos(repos []Repository, project string) []string {
	var out []string
	for _, r := range repos {
		if r.Project != "" && r.Project != project {
			out = append(out, CanonicalRepoURL(r.URL))
		}
	}
	slices.Sort(out)
	return out
}
