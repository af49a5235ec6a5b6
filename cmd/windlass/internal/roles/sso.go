package roles

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/api/sso"
	"github.com/windlass-cd/windlass/internal/dexserver"
)

// envOIDCClientSecret holds the external issuer's client secret: never a
// flag nor a file, which end up in logs and process lists.
const envOIDCClientSecret = "WINDLASS_OIDC_CLIENT_SECRET"

const msgSSOConfigured = "single sign-on configured"

// ssoSettings are the flags of single sign-on (server and dev roles).
type ssoSettings struct {
	// ExternalURL is where browsers and the CLI reach the API: the base
	// of the callback and of the in-process Dex's issuer.
	ExternalURL string
	// OIDCIssuer is an external issuer (a Dex of its own, say), with the
	// API's client and the CLI's.
	OIDCIssuer      string
	OIDCClientID    string
	OIDCCLIClientID string
	// apiAddr is the API's listen address: the default external URL.
	apiAddr string
}

func bindSSO(fs *flag.FlagSet, s *ssoSettings) {
	fs.StringVar(&s.ExternalURL, "external-url", env("EXTERNAL_URL", ""), "URL at which browsers and the CLI reach the API, for single sign-on (env WINDLASS_EXTERNAL_URL; default http://<api-address>)")
	fs.StringVar(&s.OIDCIssuer, "oidc-issuer", env("OIDC_ISSUER", ""), "external OIDC issuer for single sign-on, such as a Dex of its own (env WINDLASS_OIDC_ISSUER; its client secret comes from "+envOIDCClientSecret+")")
	fs.StringVar(&s.OIDCClientID, "oidc-client-id", env("OIDC_CLIENT_ID", ""), "the API's client at the external issuer (env WINDLASS_OIDC_CLIENT_ID; default "+dexserver.WebClientID+")")
	fs.StringVar(&s.OIDCCLIClientID, "oidc-cli-client-id", env("OIDC_CLI_CLIENT_ID", ""), "the CLI's public client at the external issuer, for `windlass login --sso` (env WINDLASS_OIDC_CLI_CLIENT_ID; default "+dexserver.CLIClientID+")")
}

// ssoFile is the `sso` section of the auth config file.
type ssoFile struct {
	// Name is shown on the login button (default "Dex").
	Name string `json:"name,omitempty"`
	// Dex runs Dex in process, at <external URL>/api/dex.
	Dex *dexserver.Config `json:"dex,omitempty"`
	// OIDC names an external issuer instead (the flags take precedence).
	OIDC *oidcFile `json:"oidc,omitempty"`
	// GroupsClaim names the ID token claim with the groups (default
	// "groups").
	GroupsClaim string `json:"groupsClaim,omitempty"`
}

// oidcFile is an external issuer.
type oidcFile struct {
	Issuer      string   `json:"issuer,omitempty"`
	ClientID    string   `json:"clientID,omitempty"`
	CLIClientID string   `json:"cliClientID,omitempty"`
	Scopes      []string `json:"scopes,omitempty"`
}

// externalURL is the API's external URL without a trailing slash.
func (s ssoSettings) externalURL() (string, error) {
	ext := s.ExternalURL
	if ext == "" {
		host, port, err := net.SplitHostPort(s.apiAddr)
		if err != nil {
			return "", fmt.Errorf("external-url: none given, and api-address %q has no port: %w", s.apiAddr, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		ext = "http://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(ext)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("external-url %q must be an http(s) URL such as https://windlass.example.com", ext)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// firstOf is the first non-empty value.
func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// buildSSO makes single sign-on from the auth file's sso section and the
// flags: an in-process Dex (sso.dex) or an external issuer (--oidc-issuer
// or sso.oidc), or nothing when neither is set. The Dex, when there is
// one, is returned for the API to mount; its background work ends with
// ctx.
func buildSSO(ctx context.Context, log *slog.Logger, f *ssoFile, s ssoSettings, sessions sso.Sessions, rdb redis.UniversalClient) (*sso.Handler, api.Mounted, error) {
	if f == nil {
		f = &ssoFile{}
	}
	oidc := f.OIDC
	if oidc == nil {
		oidc = &oidcFile{}
	}
	issuer := firstOf(s.OIDCIssuer, oidc.Issuer)
	if f.Dex == nil && issuer == "" {
		return nil, nil, nil
	}
	if f.Dex != nil && issuer != "" {
		return nil, nil, errors.New("single sign-on: give either sso.dex (Dex in process) or an external issuer (--oidc-issuer, sso.oidc), not both")
	}
	ext, err := s.externalURL()
	if err != nil {
		return nil, nil, fmt.Errorf("single sign-on: %w", err)
	}
	cfg := sso.Config{
		Name: f.Name, GroupsClaim: f.GroupsClaim, RedirectURL: ext + "/api/v1" + sso.PathCallback,
		Issuer: issuer, Scopes: oidc.Scopes,
		ClientID:     firstOf(s.OIDCClientID, oidc.ClientID, dexserver.WebClientID),
		CLIClientID:  firstOf(s.OIDCCLIClientID, oidc.CLIClientID, dexserver.CLIClientID),
		ClientSecret: os.Getenv(envOIDCClientSecret),
	}
	var dex api.Mounted
	if f.Dex != nil {
		cfg.ClientSecret = rand.Text()
		d, err := dexserver.New(ctx, *f.Dex, dexserver.Options{
			Issuer: ext + dexserver.Path, RedirectURI: cfg.RedirectURL, ClientSecret: cfg.ClientSecret, Logger: log,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("single sign-on: %w", err)
		}
		cfg.Name = firstOf(cfg.Name, "Dex")
		cfg.Issuer, cfg.ClientID, cfg.CLIClientID, cfg.HTTPClient = d.Issuer(), dexserver.WebClientID, dexserver.CLIClientID, d.Client()
		dex = d
	}
	h, err := sso.New(cfg, sessions, sso.RedisFlows{Client: rdb}, log)
	if err != nil {
		return nil, nil, fmt.Errorf("single sign-on: %w", err)
	}
	log.Info(msgSSOConfigured, "issuer", cfg.Issuer, "in_process_dex", f.Dex != nil, "client_id", cfg.ClientID,
		"client_secret_set", cfg.ClientSecret != "", "cli_client_id", cfg.CLIClientID, "callback", cfg.RedirectURL)
	return h, dex, nil
}
