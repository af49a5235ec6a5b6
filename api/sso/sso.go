package sso

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v5"
	"golang.org/x/oauth2"

	"github.com/windlass-cd/windlass/api/auth"
)

// Routes, relative to the API's /api/v1 group. All four are public: they
// are how a caller gets a session.
const (
	PathConfig   = "/sso/config"
	PathLogin    = "/sso/login"
	PathCallback = "/sso/callback"
	PathToken    = "/sso/token"
)

// FlowCookie binds a login in progress to the browser that started it: it
// holds the state, and the callback must come with it.
const FlowCookie = "windlass.sso"

// Log messages.
const (
	msgLoginStarted   = "sso login started"
	msgLoginFailed    = "sso login failed"
	msgDiscoveryError = "sso issuer discovery failed"
)

// maxReturnBytes bounds the return path; maxTokenBody the CLI's request.
const (
	maxReturnBytes = 2048
	maxTokenBody   = 64 << 10
	discoveryWait  = 10 * time.Second
)

// Sessions issues Windlass sessions to verified users (*auth.Service).
type Sessions interface {
	IssueSession(c *echo.Context, subject string, groups []string) (token string, expiresAt time.Time, err error)
}

var _ Sessions = (*auth.Service)(nil)

// Handler serves the single sign-on routes. Create it with New, or
// Disabled when single sign-on is off.
type Handler struct {
	cfg      Config
	sessions Sessions
	flows    Flows
	log      *slog.Logger
	now      func() time.Time

	mu   sync.Mutex
	prov *provider // discovered on first use
}

// provider is the discovered issuer.
type provider struct {
	oauth oauth2.Config
	// web verifies the code flow's ID tokens, cli the CLI's.
	web, cli *oidc.IDTokenVerifier
}

// New checks cfg and returns the Handler. sessions issues the sessions;
// flows keeps the logins in progress (RedisFlows).
func New(cfg Config, sessions Sessions, flows Flows, logger *slog.Logger) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sessions == nil || flows == nil {
		return nil, errors.New("sso: sessions and flows are required")
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Handler{cfg: cfg.withDefaults(), sessions: sessions, flows: flows, log: logger, now: time.Now}, nil
}

// Disabled is the Handler of an API without single sign-on: GET
// /sso/config says so, the other routes answer 404.
func Disabled() *Handler { return &Handler{} }

func (h *Handler) enabled() bool { return h.cfg.Issuer != "" }

// RegisterRoutes adds the routes to g (the API's /api/v1 group):
//
//	GET  /sso/config    whether SSO is on, its name, issuer and CLI client
//	GET  /sso/login     ?return=<relative path>: redirects to the issuer
//	GET  /sso/callback  the issuer's redirect: opens the session, redirects back
//	POST /sso/token     {idToken} of the CLI's device flow: the session as JSON
func (h *Handler) RegisterRoutes(g *echo.Group) {
	g.GET(PathConfig, h.config)
	g.GET(PathLogin, h.login)
	g.GET(PathCallback, h.callback)
	g.POST(PathToken, h.token)
}

// fail is an error answer: status and a message safe to show, wrapping
// the cause for the API's error log.
func fail(status int, msg string, cause ...error) error {
	e := echo.NewHTTPError(status, msg)
	if len(cause) > 0 {
		return e.Wrap(errors.Join(cause...))
	}
	return e
}

var errDisabled = fail(http.StatusNotFound, "single sign-on is not configured")

// discover reads the issuer's discovery document once; a failure is
// retried by the next request.
func (h *Handler) discover(ctx context.Context) (*provider, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.prov != nil {
		return h.prov, nil
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryWait)
	defer cancel()
	// The provider keeps this context's client (not its deadline) for its
	// key set.
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, h.cfg.HTTPClient), h.cfg.Issuer)
	if err != nil {
		h.log.Warn(msgDiscoveryError, "issuer", h.cfg.Issuer, "error", err)
		return nil, fail(http.StatusServiceUnavailable, "the identity provider "+h.cfg.Issuer+" cannot be reached; try again later", err)
	}
	verifier := func(clientID string) *oidc.IDTokenVerifier {
		return p.Verifier(&oidc.Config{ClientID: clientID, Now: func() time.Time { return h.now() }})
	}
	h.prov = &provider{
		oauth: oauth2.Config{
			ClientID: h.cfg.ClientID, ClientSecret: h.cfg.ClientSecret, Endpoint: p.Endpoint(),
			RedirectURL: h.cfg.RedirectURL, Scopes: h.cfg.Scopes,
		},
		web: verifier(h.cfg.ClientID),
	}
	if h.cfg.CLIClientID != "" {
		h.prov.cli = verifier(h.cfg.CLIClientID)
	}
	return h.prov, nil
}

// configView is GET /sso/config's answer.
type configView struct {
	Enabled bool `json:"enabled"`
	// Name is shown on the login button.
	Name string `json:"name,omitempty"`
	// LoginURL starts the browser's login (add ?return=<path>).
	LoginURL string `json:"loginURL,omitempty"`
	// Issuer and CLIClientID are what the CLI's device flow needs.
	Issuer      string `json:"issuer,omitempty"`
	CLIClientID string `json:"cliClientID,omitempty"`
}

func (h *Handler) config(c *echo.Context) error {
	if !h.enabled() {
		return c.JSON(http.StatusOK, configView{})
	}
	login := strings.TrimSuffix(c.Path(), PathConfig) + PathLogin
	return c.JSON(http.StatusOK, configView{
		Enabled: true, Name: h.cfg.Name, LoginURL: login, Issuer: h.cfg.Issuer, CLIClientID: h.cfg.CLIClientID,
	})
}

// login starts a browser login: state, nonce and PKCE verifier are kept
// server side (Flows) for FlowTTL, the state also in FlowCookie, and the
// browser goes to the issuer.
func (h *Handler) login(c *echo.Context) error {
	if !h.enabled() {
		return errDisabled
	}
	ret, err := returnPath(c.QueryParam("return"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p, err := h.discover(ctx)
	if err != nil {
		return err
	}
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	if err := h.flows.Put(ctx, state, Flow{Nonce: nonce, Verifier: verifier, Return: ret}, h.cfg.FlowTTL); err != nil {
		return fail(http.StatusServiceUnavailable, "cannot start the login: the session store is unavailable; try again later", err)
	}
	h.setFlowCookie(c, state, int(h.cfg.FlowTTL/time.Second))
	h.log.Info(msgLoginStarted, "return", ret, "ip", c.RealIP())
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.Redirect(http.StatusFound, p.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
}

// setFlowCookie sets (maxAge > 0) or clears (maxAge < 0) FlowCookie. It
// is SameSite=Lax: the callback is a navigation from the issuer's site.
func (h *Handler) setFlowCookie(c *echo.Context, state string, maxAge int) {
	path := "/"
	if u, err := url.Parse(h.cfg.RedirectURL); err == nil && u.Path != "" {
		path = u.Path
	}
	c.SetCookie(&http.Cookie{
		Name: FlowCookie, Value: state, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: strings.HasPrefix(h.cfg.RedirectURL, "https:"), SameSite: http.SameSiteLaxMode,
	})
}

// callback finishes a browser login: the state must match the browser's
// FlowCookie and a flow in progress (which it uses up); the code is
// exchanged with the PKCE verifier; the ID token is verified (signature by
// the issuer's keys, issuer, audience, expiry, nonce); then the session is
// issued and the browser goes back to the flow's return path. Any failure
// answers 4xx (503 when something is unreachable) and issues nothing.
//
// A browser (one that accepts text/html) is sent to the UI's login page
// with the reason in ?error= instead, so that it shows a message rather
// than a JSON document.
func (h *Handler) callback(c *echo.Context) error {
	err := h.finishCallback(c)
	if err == nil || !strings.Contains(c.Request().Header.Get("Accept"), "text/html") {
		return err
	}
	msg := "single sign-on failed"
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Message != "" {
		msg = he.Message
	}
	return c.Redirect(http.StatusSeeOther, LoginPage+"?error="+url.QueryEscape(msg))
}

// LoginPage is the web UI's login page, where a browser whose callback
// failed is sent.
const LoginPage = "/login"

func (h *Handler) finishCallback(c *echo.Context) error {
	if !h.enabled() {
		return errDisabled
	}
	h.setFlowCookie(c, "", -1)
	f, err := h.takeFlow(c)
	if err != nil {
		return h.refused(c, err)
	}
	q := c.Request().URL.Query()
	if e := q.Get("error"); e != "" {
		return h.refused(c, fail(http.StatusUnauthorized, "the identity provider refused the login: "+clip(e+": "+q.Get("error_description"))))
	}
	code := q.Get("code")
	if code == "" {
		return h.refused(c, fail(http.StatusBadRequest, "the callback has no code"))
	}
	ctx := c.Request().Context()
	p, err := h.discover(ctx)
	if err != nil {
		return err
	}
	tok, err := p.oauth.Exchange(oidc.ClientContext(ctx, h.cfg.HTTPClient), code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return h.refused(c, fail(http.StatusUnauthorized, "the identity provider refused the code: "+clip(re.ErrorCode), err))
		}
		return h.refused(c, fail(http.StatusServiceUnavailable, "the identity provider cannot be reached to exchange the code; try again later", err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return h.refused(c, fail(http.StatusUnauthorized, "the identity provider answered no ID token"))
	}
	idt, err := h.verify(ctx, p.web, raw)
	if err != nil {
		return h.refused(c, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return h.refused(c, fail(http.StatusUnauthorized, "the ID token's nonce is not this login's"))
	}
	if err := h.open(c, idt); err != nil {
		return h.refused(c, err)
	}
	return c.Redirect(http.StatusSeeOther, f.Return)
}

// takeFlow checks the callback's state against the FlowCookie and uses up
// its flow.
func (h *Handler) takeFlow(c *echo.Context) (Flow, error) {
	state := c.QueryParam("state")
	if state == "" {
		return Flow{}, fail(http.StatusBadRequest, "the callback has no state")
	}
	ck, err := c.Cookie(FlowCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(state)) != 1 {
		return Flow{}, fail(http.StatusBadRequest, "the login was not started in this browser (state mismatch); start again")
	}
	f, ok, err := h.flows.Take(c.Request().Context(), state)
	if err != nil {
		return Flow{}, fail(http.StatusServiceUnavailable, "the session store is unavailable; try again later", err)
	}
	if !ok {
		return Flow{}, fail(http.StatusBadRequest, "unknown, used or expired login; start again")
	}
	return f, nil
}

// refused logs a failed login and returns its error.
func (h *Handler) refused(c *echo.Context, err error) error {
	h.log.Warn(msgLoginFailed, "path", c.Path(), "ip", c.RealIP(), "error", err)
	return err
}

// verify checks an ID token with v: the signature against the issuer's
// keys (the algorithms it announces), the issuer, the audience and the
// expiry.
func (h *Handler) verify(ctx context.Context, v *oidc.IDTokenVerifier, raw string) (*oidc.IDToken, error) {
	idt, err := v.Verify(oidc.ClientContext(ctx, h.cfg.HTTPClient), raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return nil, fail(http.StatusUnauthorized, "the ID token has expired; log in again", err)
		}
		return nil, fail(http.StatusUnauthorized, "invalid ID token: "+clip(err.Error()), err)
	}
	return idt, nil
}

// open issues the session of the token's user.
func (h *Handler) open(c *echo.Context, idt *oidc.IDToken) error {
	subject, groups, err := identity(idt, h.cfg.GroupsClaim)
	if err != nil {
		return err
	}
	_, _, err = h.sessions.IssueSession(c, subject, groups)
	return err
}

type tokenRequest struct {
	IDToken string `json:"idToken"`
}

type tokenResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// token exchanges the ID token of the CLI's device flow for a session. The
// token is verified as in the callback, for the CLI's client ID; there is
// no nonce, so it must be fresh (MaxTokenAge) and is accepted once.
func (h *Handler) token(c *echo.Context) error {
	if !h.enabled() || h.cfg.CLIClientID == "" {
		return errDisabled
	}
	if ct := c.Request().Header.Get(echo.HeaderContentType); !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		return fail(http.StatusUnsupportedMediaType, "the body must be JSON {\"idToken\": ...}")
	}
	var req tokenRequest
	if err := decodeJSON(c, maxTokenBody, &req); err != nil || req.IDToken == "" {
		return fail(http.StatusBadRequest, "the body must be JSON {\"idToken\": ...}")
	}
	ctx := c.Request().Context()
	p, err := h.discover(ctx)
	if err != nil {
		return err
	}
	idt, err := h.verify(ctx, p.cli, req.IDToken)
	if err != nil {
		return h.refused(c, err)
	}
	now := h.now()
	if age := now.Sub(idt.IssuedAt); age > h.cfg.MaxTokenAge {
		return h.refused(c, fail(http.StatusUnauthorized, fmt.Sprintf("the ID token was issued %s ago, more than %s; log in again",
			age.Round(time.Second), h.cfg.MaxTokenAge)))
	}
	first, err := h.flows.Once(ctx, digest(req.IDToken), idt.Expiry.Sub(now)+time.Minute)
	if err != nil {
		return fail(http.StatusServiceUnavailable, "the session store is unavailable; try again later", err)
	}
	if !first {
		return h.refused(c, fail(http.StatusUnauthorized, "this ID token was exchanged already; log in again"))
	}
	subject, groups, err := identity(idt, h.cfg.GroupsClaim)
	if err != nil {
		return h.refused(c, err)
	}
	tok, exp, err := h.sessions.IssueSession(c, subject, groups)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenResponse{Token: tok, ExpiresAt: exp})
}

// clip shortens text from elsewhere that goes into an answer.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
