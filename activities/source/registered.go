package source

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/windlass-cd/windlass/internal/settings"
)

// RepoLister lists the repositories registered through the API, with
// their secrets (settings.Store).
type RepoLister interface {
	Repos(ctx context.Context) ([]settings.Repository, error)
}

// RegisteredAuth resolves Git credentials at run time: registered
// repositories first (longest URL prefix), then the file-configured
// credentials.
type RegisteredAuth struct {
	Repos    RepoLister
	Fallback Credentials
	// KnownHostsDir holds the known_hosts files written for registered
	// SSH repositories.
	KnownHostsDir string

	// The registered repositories are read at most every repoAuthTTL:
	// every fetch and ls-remote asks for a credential.
	mu     sync.Mutex
	repos  []settings.Repository
	readAt time.Time
}

// repoAuthTTL is how long RegisteredAuth reuses the list of registered
// repositories; a new or changed credential is used after at most this
// long.
const repoAuthTTL = 10 * time.Second

func (a *RegisteredAuth) registered(ctx context.Context) ([]settings.Repository, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.repos != nil && time.Since(a.readAt) < repoAuthTTL {
		return a.repos, nil
	}
	repos, err := a.Repos.Repos(ctx)
	if err != nil {
		return nil, fmt.Errorf("repository credentials unavailable: %w", err)
	}
	a.repos, a.readAt = repos, time.Now()
	return repos, nil
}

// Auth implements the source activities' credential lookup.
func (a *RegisteredAuth) Auth(ctx context.Context, repoURL string) (transport.AuthMethod, error) {
	repos, err := a.registered(ctx)
	if err != nil {
		return nil, err
	}
	creds := Credentials{Repos: append([]RepoCredential(nil), a.Fallback.Repos...)}
	for _, r := range repos {
		c := registeredCredential(r)
		if r.SSHKnownHosts != "" {
			f, err := knownHostsFile(a.KnownHostsDir, r.SSHKnownHosts)
			if err != nil {
				return nil, err
			}
			c.SSHKnownHostsFile = f
		}
		creds.Repos = append(creds.Repos, c)
	}
	return creds.Auth(ctx, repoURL)
}

// registeredCredential is r's credential, with its secrets held in
// memory.
func registeredCredential(r settings.Repository) RepoCredential {
	c := RepoCredential{URLPrefix: settings.CanonicalRepoURL(r.URL), Username: r.Username, Bearer: r.BearerToken != "",
		InsecureIgnoreHostKey: r.InsecureIgnoreHostKey}
	secret := r.Password
	if r.BearerToken != "" {
		secret = r.BearerToken
	}
	return c.WithSecrets(secret, []byte(r.SSHPrivateKey))
}
