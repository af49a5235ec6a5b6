package settings

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Repository is a registered Git repository with its credential. The
// secret fields are write-only: View drops them.
type Repository struct {
	URL     string `json:"url"`
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
}

// RepositoryView is what the API shows of a repository: never a secret,
// only whether one is set.
type RepositoryView struct {
	URL                   string `json:"url"`
	Project               string `json:"project,omitempty"`
	Username              string `json:"username,omitempty"`
	HasPassword           bool   `json:"hasPassword"`
	HasToken              bool   `json:"hasToken"`
	HasSSHKey             bool   `json:"hasSSHKey"`
	InsecureIgnoreHostKey bool   `json:"insecureIgnoreHostKey,omitempty"`
}

// View drops the secrets, also a password in a URL stored before Validate
// refused them.
func (r Repository) View() RepositoryView {
	return RepositoryView{URL: redactURL(r.URL), Project: r.Project, Username: r.Username, HasPassword: r.Password != "",
		HasToken: r.BearerToken != "", HasSSHKey: r.SSHPrivateKey != "", InsecureIgnoreHostKey: r.InsecureIgnoreHostKey}
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
	case appspec.RepoURLHasPassword(r.URL):
		// The URL is stored and shown as it is; the message must not echo it.
		return fmt.Errorf("%w: url holds a password: use the username and password (or bearerToken) fields, which are stored as secrets", ErrInvalid)
	}
	if err := appspec.CheckRepoTransport(r.URL); err != nil {
		return fmt.Errorf("%w: url: %w", ErrInvalid, err)
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
	data := map[string][]byte{
		"url": []byte(r.URL), "project": []byte(r.Project), "username": []byte(r.Username),
		"password": []byte(r.Password), "bearerToken": []byte(r.BearerToken),
		"sshPrivateKey": []byte(r.SSHPrivateKey), "sshKnownHosts": []byte(r.SSHKnownHosts),
		"insecureIgnoreHostKey": []byte(strconv.FormatBool(r.InsecureIgnoreHostKey)),
	}
	if err := s.s.Put(ctx, key(prefixRepo, CanonicalRepoURL(r.URL)), data); err != nil {
		return fmt.Errorf("store repository %s: %w", r.URL, err)
	}
	return nil
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
	insecure, _ := strconv.ParseBool(string(d["insecureIgnoreHostKey"]))
	return Repository{URL: string(d["url"]), Project: string(d["project"]), Username: string(d["username"]),
		Password: string(d["password"]), BearerToken: string(d["bearerToken"]), SSHPrivateKey: string(d["sshPrivateKey"]),
		SSHKnownHosts: string(d["sshKnownHosts"]), InsecureIgnoreHostKey: insecure}
}

// Repos lists the registered repositories, with their secrets.
func (s *Store) Repos(ctx context.Context) ([]Repository, error) {
	names, err := s.s.List(ctx, prefixRepo)
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
