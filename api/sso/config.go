package sso

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Defaults of Config.
const (
	// DefaultFlowTTL is how long a browser login may take.
	DefaultFlowTTL = 10 * time.Minute
	// DefaultMaxTokenAge is how old an ID token the CLI exchanges may be.
	DefaultMaxTokenAge = 5 * time.Minute
	// DefaultGroupsClaim names the ID token claim with the groups.
	DefaultGroupsClaim = "groups"
	// DefaultName is shown when Config.Name is empty.
	DefaultName = "SSO"
)

// DefaultScopes are asked of the identity provider.
var DefaultScopes = []string{"openid", "profile", "email", "groups"}

// Config configures single sign-on against one OIDC issuer: Windlass's
// in-process Dex or an external one.
type Config struct {
	// Name is shown by the UI and the CLI ("Log in with <Name>").
	Name string
	// Issuer is the issuer URL; its discovery document is read on the
	// first login, not at start, so that the issuer may start later.
	Issuer string
	// ClientID and ClientSecret are the API's client (the browser's code
	// flow). The secret may be empty for a public client; it is never
	// logged nor answered.
	ClientID     string
	ClientSecret string
	// CLIClientID is the public client of `windlass login --sso` (the
	// device flow); the ID tokens POST /sso/token accepts are for it. Empty
	// turns that endpoint off.
	CLIClientID string
	// RedirectURL is the API's callback as the browser reaches it:
	// <external URL>/api/v1/sso/callback. Its scheme decides whether the
	// flow cookie is Secure.
	RedirectURL string
	// Scopes default to DefaultScopes.
	Scopes []string
	// GroupsClaim names the claim with the user's groups (default
	// "groups"); a string or a list of strings.
	GroupsClaim string
	// HTTPClient reaches the issuer (default http.DefaultClient).
	HTTPClient *http.Client
	// FlowTTL bounds a browser login (default 10 min).
	FlowTTL time.Duration
	// MaxTokenAge bounds the age of an ID token the CLI exchanges (default
	// 5 min): a token found later (in a log, say) is no use.
	MaxTokenAge time.Duration
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if len(c.Scopes) == 0 {
		c.Scopes = DefaultScopes
	}
	if c.GroupsClaim == "" {
		c.GroupsClaim = DefaultGroupsClaim
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.FlowTTL == 0 {
		c.FlowTTL = DefaultFlowTTL
	}
	if c.MaxTokenAge == 0 {
		c.MaxTokenAge = DefaultMaxTokenAge
	}
	return c
}

// Validate reports every invalid setting.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	u, err := url.Parse(c.Issuer)
	check(err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "", "sso: issuer %q must be an http(s) URL", c.Issuer)
	check(c.ClientID != "", "sso: the client ID is required")
	r, err := url.Parse(c.RedirectURL)
	check(err == nil && (r.Scheme == "https" || r.Scheme == "http") && r.Host != "" && r.Path != "",
		"sso: the redirect URL %q must be an absolute http(s) URL (<external URL>/api/v1/sso/callback)", c.RedirectURL)
	check(c.FlowTTL >= 0 && c.MaxTokenAge >= 0, "sso: durations must not be negative")
	return errors.Join(errs...)
}
