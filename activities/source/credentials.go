package source

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// RepoCredential names, by reference, the credential for repositories whose
// URL starts with URLPrefix. The secret itself is read at run time from
// PasswordFile or the environment variable PasswordEnv.
type RepoCredential struct {
	URLPrefix    string `json:"urlPrefix"`
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	PasswordEnv  string `json:"passwordEnv,omitempty"`
}

// Credentials resolves repository credentials by URL. The longest matching
// prefix wins. The zero value has no credentials.
type Credentials struct {
	Repos []RepoCredential
}

// Auth returns the auth method for repoURL, or nil for anonymous access.
func (c Credentials) Auth(_ context.Context, repoURL string) (transport.AuthMethod, error) {
	var best *RepoCredential
	for i := range c.Repos {
		r := &c.Repos[i]
		if strings.HasPrefix(repoURL, r.URLPrefix) && (best == nil || len(r.URLPrefix) > len(best.URLPrefix)) {
			best = r
		}
	}
	if best == nil {
		return nil, nil
	}
	var secret string
	switch {
	case best.PasswordFile != "":
		b, err := os.ReadFile(best.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("read credential for %s: %w", best.URLPrefix, err)
		}
		secret = strings.TrimRight(string(b), "\r\n")
	case best.PasswordEnv != "":
		v, ok := os.LookupEnv(best.PasswordEnv)
		if !ok {
			return nil, fmt.Errorf("credential for %s: environment variable %s is not set", best.URLPrefix, best.PasswordEnv)
		}
		secret = v
	}
	user := best.Username
	if user == "" {
		user = "git"
	}
	return &githttp.BasicAuth{Username: user, Password: secret}, nil
}
