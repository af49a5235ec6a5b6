package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// RepoCredential names, by reference, the credential for repositories whose
// URL starts with URLPrefix. Secrets are read at run time, from files or
// the environment, never from the configuration itself.
//
// HTTPS: Username and the password or token in PasswordFile or PasswordEnv
// are sent as basic auth. GitHub, GitLab and Bitbucket take a personal
// access token that way (any non-empty username, the token as password).
// With Bearer set the secret is sent as "Authorization: Bearer <token>"
// instead, for servers that want that (Azure DevOps, Gitea with OAuth
// tokens).
//
// SSH (ssh://host/repo or scp-like git@host:org/repo URLs): the private key
// in SSHPrivateKeyFile, unlocked with the secret of PasswordFile or
// PasswordEnv when it is encrypted. The server's host key must be listed in
// SSHKnownHostsFile (default: $SSH_KNOWN_HOSTS, ~/.ssh/known_hosts,
// /etc/ssh/ssh_known_hosts); InsecureIgnoreHostKey accepts any host key and
// is meant for tests only. The user is the URL's, else Username, else git.
type RepoCredential struct {
	URLPrefix    string `json:"urlPrefix"`
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	PasswordEnv  string `json:"passwordEnv,omitempty"`
	Bearer       bool   `json:"bearer,omitempty"`

	SSHPrivateKeyFile     string `json:"sshPrivateKeyFile,omitempty"`
	SSHKnownHostsFile     string `json:"sshKnownHostsFile,omitempty"`
	InsecureIgnoreHostKey bool   `json:"insecureIgnoreHostKey,omitempty"`

	// inline holds secrets loaded from the secret store at run time
	// (WithSecrets); they are never serialised.
	inline *inlineSecrets
}

type inlineSecrets struct {
	secret string
	sshKey []byte
}

// WithSecrets returns a copy of r that uses secret (password, token or key
// passphrase) and the PEM sshKey instead of reading them from files or the
// environment: for credentials that an activity has just loaded from the
// secret store. They live in memory only and never marshal to JSON.
func (r RepoCredential) WithSecrets(secret string, sshKey []byte) RepoCredential {
	r.inline = &inlineSecrets{secret: secret, sshKey: sshKey}
	return r
}

// Credentials resolves repository credentials by URL. The longest matching
// prefix wins. The zero value has no credentials.
type Credentials struct {
	Repos []RepoCredential `json:"repositories"`
}

// LoadCredentialsFile reads Credentials from a JSON file of the form
// {"repositories": [{"urlPrefix": ..., ...}]}. The file holds references to
// secrets, not secrets.
func LoadCredentialsFile(path string) (Credentials, error) {
	var c Credentials
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read repository credentials: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("parse repository credentials %s: %w", path, err)
	}
	return c, c.Validate()
}

// Validate checks that every entry is complete and consistent.
func (c Credentials) Validate() error {
	var errs []error
	for i, r := range c.Repos {
		switch {
		case r.URLPrefix == "":
			errs = append(errs, fmt.Errorf("repository credential %d: urlPrefix is required", i))
		case r.PasswordFile != "" && r.PasswordEnv != "":
			errs = append(errs, fmt.Errorf("repository credential %s: set passwordFile or passwordEnv, not both", r.URLPrefix))
		case r.SSHPrivateKeyFile != "" && r.Bearer:
			errs = append(errs, fmt.Errorf("repository credential %s: bearer is for HTTPS, not SSH", r.URLPrefix))
		}
	}
	return errors.Join(errs...)
}

// Auth returns the auth method for repoURL, or nil for anonymous HTTPS
// access. An SSH URL needs a credential with a private key.
func (c Credentials) Auth(_ context.Context, repoURL string) (transport.AuthMethod, error) {
	isSSH, user, hostPort := sshEndpoint(repoURL)
	best := c.match(repoURL)
	if best == nil {
		if isSSH {
			return nil, fmt.Errorf("%s: %w: no SSH credential is configured for it", redactURL(repoURL), ErrAuthFailed)
		}
		return nil, nil
	}
	secret, err := best.secret()
	if err != nil {
		return nil, err
	}
	if isSSH {
		return best.sshAuth(user, hostPort, secret)
	}
	if best.SSHPrivateKeyFile != "" || (best.inline != nil && len(best.inline.sshKey) > 0) {
		return nil, fmt.Errorf("%s: %w: the credential for %s is an SSH key, the URL is not SSH", redactURL(repoURL), ErrAuthFailed, best.URLPrefix)
	}
	if best.Bearer {
		return &githttp.TokenAuth{Token: secret}, nil
	}
	name := best.Username
	if name == "" {
		name = "git"
	}
	return &githttp.BasicAuth{Username: name, Password: secret}, nil
}

func (c Credentials) match(repoURL string) *RepoCredential {
	var best *RepoCredential
	for i := range c.Repos {
		r := &c.Repos[i]
		if strings.HasPrefix(repoURL, r.URLPrefix) && (best == nil || len(r.URLPrefix) > len(best.URLPrefix)) {
			best = r
		}
	}
	return best
}

// secret reads the password, token or key passphrase; "" when none is set.
func (r *RepoCredential) secret() (string, error) {
	switch {
	case r.inline != nil:
		return r.inline.secret, nil
	case r.PasswordFile != "":
		b, err := os.ReadFile(r.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("read credential for %s: %w", r.URLPrefix, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	case r.PasswordEnv != "":
		v, ok := os.LookupEnv(r.PasswordEnv)
		if !ok {
			return "", fmt.Errorf("credential for %s: environment variable %s is not set", r.URLPrefix, r.PasswordEnv)
		}
		return v, nil
	}
	return "", nil
}

// sshAuth builds public-key auth with host key checking for hostPort.
func (r *RepoCredential) sshAuth(user, hostPort, passphrase string) (transport.AuthMethod, error) {
	if r.SSHPrivateKeyFile == "" && (r.inline == nil || len(r.inline.sshKey) == 0) {
		return nil, fmt.Errorf("%w: the credential for %s has no sshPrivateKeyFile", ErrAuthFailed, r.URLPrefix)
	}
	if user == "" {
		user = r.Username
	}
	if user == "" {
		user = gitssh.DefaultUsername
	}
	pem, err := r.sshKey()
	if err != nil {
		return nil, err
	}
	auth, err := gitssh.NewPublicKeys(user, pem, passphrase)
	if err != nil {
		// The parser's messages name no key material.
		return nil, fmt.Errorf("%w: ssh key for %s: %w", ErrAuthFailed, r.URLPrefix, err)
	}
	if r.InsecureIgnoreHostKey {
		auth.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // asked for explicitly
		return auth, nil
	}
	var files []string
	if r.SSHKnownHostsFile != "" {
		files = []string{r.SSHKnownHostsFile}
	}
	db, err := gitssh.NewKnownHostsDb(files...)
	if err != nil {
		return nil, fmt.Errorf("%w: known_hosts for %s: %w", ErrHostKeyMismatch, r.URLPrefix, err)
	}
	check := db.HostKeyCallback()
	auth.HostKeyCallback = func(host string, remote net.Addr, key ssh.PublicKey) error {
		if err := check(host, remote, key); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrHostKeyMismatch, host, err)
		}
		return nil
	}
	// Offer only the key types known_hosts lists, so that a server with
	// several host keys presents one we can check.
	auth.HostKeyAlgorithms = db.HostKeyAlgorithms(hostPort)
	return auth, nil
}

func (r *RepoCredential) sshKey() ([]byte, error) {
	if r.inline != nil && len(r.inline.sshKey) > 0 {
		return r.inline.sshKey, nil
	}
	pem, err := os.ReadFile(r.SSHPrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("read ssh key for %s: %w", r.URLPrefix, err)
	}
	return pem, nil
}

// sshEndpoint reports whether repoURL is an SSH URL and, if so, its user
// and host:port.
func sshEndpoint(repoURL string) (isSSH bool, user, hostPort string) {
	ep, err := transport.NewEndpoint(repoURL)
	if err != nil || ep.Protocol != "ssh" {
		return false, "", ""
	}
	port := ep.Port
	if port == 0 {
		port = gitssh.DefaultPort
	}
	return true, ep.User, net.JoinHostPort(ep.Host, strconv.Itoa(port))
}

// CheckTransport refuses a repository URL whose transport is not allowed
// (appspec.CheckRepoTransport), as a permanent error.
func CheckTransport(repoURL string) error {
	if err := appspec.CheckRepoTransport(repoURL); err != nil {
		return fmt.Errorf("%w: %w", ErrTransportNotAllowed, err)
	}
	return nil
}
