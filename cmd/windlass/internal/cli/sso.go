package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/windlass-cd/windlass/api/sso"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

// ssoSettingsView is GET /api/v1/sso/config.
type ssoSettingsView struct {
	Enabled     bool   `json:"enabled"`
	Name        string `json:"name"`
	Issuer      string `json:"issuer"`
	CLIClientID string `json:"cliClientID"`
}

// loginSSO logs in through single sign-on: the OAuth device flow at the
// server's identity provider with its CLI client and PKCE (the user opens
// the printed URL in any browser), then the ID token is exchanged for a
// Windlass session, which is kept like a password login's.
func (c *cli) loginSSO(ctx context.Context, s *session) error {
	s.api.token = "" // a login sends no token
	var conf ssoSettingsView
	if _, err := s.api.json(ctx, http.MethodGet, "/api/v1"+sso.PathConfig, nil, nil, &conf); err != nil {
		return fmt.Errorf("read the single sign-on settings of %s: %w", s.api.base, err)
	}
	if !conf.Enabled {
		return fmt.Errorf("single sign-on is not configured on %s; log in with --username", s.api.base)
	}
	if conf.CLIClientID == "" {
		return fmt.Errorf("%s has no client for the CLI's single sign-on; log in with --username", s.api.base)
	}
	octx := oidc.ClientContext(ctx, c.http)
	p, err := oidc.NewProvider(octx, conf.Issuer)
	if err != nil {
		return fmt.Errorf("reach the identity provider %s: %w", conf.Issuer, err)
	}
	cfg := oauth2.Config{ClientID: conf.CLIClientID, Endpoint: p.Endpoint(), Scopes: sso.DefaultScopes}
	if cfg.Endpoint.DeviceAuthURL == "" {
		return fmt.Errorf("the identity provider %s offers no device flow", conf.Issuer)
	}
	cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams // a public client
	verifier := oauth2.GenerateVerifier()
	da, err := cfg.DeviceAuth(octx, oauth2.S256ChallengeOption(verifier))
	if err != nil {
		return fmt.Errorf("start the device login at %s: %w", conf.Issuer, err)
	}
	open := da.VerificationURIComplete
	if open == "" {
		open = da.VerificationURI
	}
	fmt.Fprintf(c.stderr, "To log in with %s, open %s\nor open %s and enter the code %s\nWaiting for the login...\n",
		conf.Name, open, da.VerificationURI, da.UserCode)
	tok, err := cfg.DeviceAccessToken(octx, da, oauth2.VerifierOption(verifier))
	if err != nil {
		return cmdline.WithCode(cmdline.ExitUnauthorized, fmt.Errorf("the device login at %s did not complete: %w", conf.Issuer, err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return fmt.Errorf("the identity provider %s answered no ID token", conf.Issuer)
	}
	var answer sessionAnswer
	if _, err := s.api.json(ctx, http.MethodPost, "/api/v1"+sso.PathToken, nil, map[string]string{"idToken": raw}, &answer); err != nil {
		if ae := (*apiError)(nil); errors.As(err, &ae) {
			ae.noHint = true
		}
		return fmt.Errorf("log in to %s with %s: %w", s.api.base, conf.Name, err)
	}
	s.api.token = answer.Token
	var who struct {
		Name string `json:"name"`
	}
	if _, err := s.api.json(ctx, http.MethodGet, "/api/v1/session/userinfo", nil, nil, &who); err != nil {
		return fmt.Errorf("log in to %s: read the session: %w", s.api.base, err)
	}
	return c.keepSession(s, who.Name, answer)
}
