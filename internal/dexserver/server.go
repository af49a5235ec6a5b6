package dexserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	gosundheit "github.com/AppsFlyer/go-sundheit"
	dex "github.com/dexidp/dex/server"
	"github.com/dexidp/dex/server/authflow"
	"github.com/dexidp/dex/server/connectors"
	"github.com/dexidp/dex/server/signer"
	"github.com/dexidp/dex/storage"
	"github.com/dexidp/dex/storage/memory"
)

// Path is where the API serves Dex: the issuer is <external URL>/api/dex.
const Path = "/api/dex"

// The clients of Windlass in Dex.
const (
	// WebClientID is the API's client: the browser login's code flow,
	// confidential (Options.ClientSecret), redirecting to
	// Options.RedirectURI only.
	WebClientID = "windlass"
	// CLIClientID is the CLI's public client: the device flow.
	CLIClientID = "windlass-cli"
)

// Defaults.
const (
	// IDTokenLifetime is how long Dex's ID tokens are valid; Windlass
	// turns them into its own sessions at once.
	IDTokenLifetime = 15 * time.Minute
	// keyRotation is how often Dex makes a new signing key.
	keyRotation = "6h"
	// minClientSecret is the shortest secret of the web client.
	minClientSecret = 16
)

const msgStarted = "dex started"

// Options are what Windlass decides at start.
type Options struct {
	// Issuer is the URL Dex is reached at: <external URL> + Path.
	Issuer string
	// RedirectURI is the API's callback, <external URL>/api/v1/sso/callback.
	RedirectURI string
	// ClientSecret is the web client's secret, made at start. It is
	// never logged.
	ClientSecret string
	Logger       *slog.Logger
}

func (o Options) validate() (*url.URL, error) {
	var errs []error
	u, err := url.Parse(o.Issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") == "" || u.RawQuery != "" || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("dex: issuer %q must be an http(s) URL with a path, such as https://windlass.example.com%s", o.Issuer, Path))
	}
	if r, err := url.Parse(o.RedirectURI); err != nil || !r.IsAbs() {
		errs = append(errs, fmt.Errorf("dex: redirect URI %q must be an absolute URL", o.RedirectURI))
	}
	if len(o.ClientSecret) < minClientSecret {
		errs = append(errs, fmt.Errorf("dex: the client secret must be at least %d characters", minClientSecret))
	}
	return u, errors.Join(errs...)
}

// Server is Dex running in this process on memory storage. It is an
// http.Handler for the requests under its issuer's path.
type Server struct {
	dex    *dex.Server
	issuer *url.URL
	client *http.Client
}

// New starts Dex with cfg's connectors and static users, and Windlass's
// two clients. Its background work (key rotation, garbage collection)
// ends with ctx. The state (signing keys, logins in progress) lives in
// memory: each API replica has its own Dex, so a login must come back to
// the replica that started it (see the package doc).
func New(ctx context.Context, cfg Config, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	issuer, err := opts.validate()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "dex")
	var st storage.Storage = memory.New(log)
	st = storage.WithStaticClients(st, []storage.Client{
		{ID: WebClientID, Secret: opts.ClientSecret, Name: "Windlass", RedirectURIs: []string{opts.RedirectURI}},
		// Dex sends the device flow's browser to /auth with the redirect URI
		// <issuer path>/device/callback, but accepts only /device/callback
		// from a public client without redirect URIs: under a path, name it.
		{ID: CLIClientID, Public: true, Name: "Windlass CLI", RedirectURIs: []string{issuer.JoinPath("device", "callback").Path}},
	})
	var conns []storage.Connector
	for _, c := range cfg.Connectors {
		b, err := c.expanded()
		if err != nil {
			return nil, err // checked by Validate
		}
		conns = append(conns, storage.Connector{ID: c.ID, Type: c.Type, Name: c.Name, Config: b})
	}
	if len(cfg.StaticPasswords) > 0 {
		st = storage.WithStaticPasswords(st, staticPasswords(cfg.StaticPasswords), log)
		conns = append(conns, storage.Connector{ID: connectors.LocalConnector, Type: connectors.LocalConnector, Name: "Email"})
	}
	st = storage.WithStaticConnectors(st, conns)

	now := func() time.Time { return time.Now().UTC() }
	sig, err := (&signer.LocalConfig{KeysRotationPeriod: keyRotation}).Open(ctx, st, IDTokenLifetime, now, log)
	if err != nil {
		return nil, fmt.Errorf("dex: signer: %w", err)
	}
	d, err := dex.NewServer(ctx, dex.Config{
		Issuer:             issuer.String(),
		Storage:            st,
		SkipApprovalScreen: cfg.skipApproval(),
		IDTokensValidFor:   IDTokenLifetime,
		// Windlass always sends an S256 challenge; the device flow's
		// own redirect has none, so PKCE is not enforced.
		PKCE:          authflow.PKCEConfig{CodeChallengeMethodsSupported: []string{"S256"}},
		Now:           now,
		Logger:        log,
		Signer:        sig,
		HealthChecker: gosundheit.New(),
		Web:           dex.WebConfig{Issuer: "Windlass"},
	})
	if err != nil {
		return nil, fmt.Errorf("dex: %w", err)
	}
	s := &Server{dex: d, issuer: issuer}
	s.client = &http.Client{Transport: &localTransport{issuer: issuer, h: d, next: http.DefaultTransport}}
	log.Info(msgStarted, "issuer", issuer.String(), "connectors", len(conns))
	return s, nil
}

// staticPasswords converts the static users to Dex's; a user without an
// ID gets one derived from the email, stable across restarts.
func staticPasswords(ps []Password) []storage.Password {
	out := make([]storage.Password, 0, len(ps))
	for _, p := range ps {
		id := p.UserID
		if id == "" {
			sum := sha256.Sum256([]byte(strings.ToLower(p.Email)))
			id = hex.EncodeToString(sum[:16])
		}
		out = append(out, storage.Password{
			Email: p.Email, Hash: p.hash(), Username: p.Username, UserID: id, Groups: p.Groups,
		})
	}
	return out
}

// ServeHTTP serves Dex's endpoints under the issuer's path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.dex.ServeHTTP(w, r) }

// PathPrefix is the issuer's path, under which the API mounts the Server.
func (s *Server) PathPrefix() string { return strings.TrimRight(s.issuer.Path, "/") }

// Issuer is the issuer URL.
func (s *Server) Issuer() string { return s.issuer.String() }

// Client is an HTTP client that sends the requests for the issuer's URLs
// (discovery, keys, token) straight to this Dex, without the network, and
// the others over it: the API's OIDC client uses it, so that the API never
// has to reach itself through a load balancer.
func (s *Server) Client() *http.Client { return s.client }
