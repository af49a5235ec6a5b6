// Package sso is the OIDC client of Windlass's single sign-on: it turns a
// login at an identity provider (Windlass's in-process Dex, see
// internal/dexserver, or an external issuer) into a Windlass session issued
// by api/auth (Sessions.IssueSession), so that logout, revocation, CSRF and
// RBAC treat it like a password login.
//
// # Browser
//
// GET /api/v1/sso/login?return=<path> checks that return is a relative path
// on this server (no scheme, host, "//" or backslash: no open redirect),
// makes a state, a nonce and a PKCE verifier (S256), keeps them in Flows
// (Redis, shared by the replicas, for Config.FlowTTL) and the state in the
// HttpOnly, SameSite=Lax cookie windlass.sso (path: the callback), and
// redirects to the issuer. GET /api/v1/sso/callback requires the state to
// equal that cookie (a login started in another browser is refused) and to
// name a flow in progress, which it uses up; it exchanges the code with the
// verifier, verifies the ID token (signature by the issuer's JWKS with the
// algorithms its discovery announces, issuer, audience = Config.ClientID,
// expiry, nonce = the flow's), opens the session and redirects (303) to the
// return path. Every failure (no or a wrong state, an error from the
// issuer, a refused code, a bad token) answers a 4xx problem, or 503 when
// the issuer or Redis cannot be reached, and issues nothing.
//
// # CLI
//
// `windlass login --sso` runs the OAuth device flow against the issuer with
// the public client Config.CLIClientID, then POSTs the ID token to
// /api/v1/sso/token. It is verified like the callback's, with the CLI's
// client ID as audience; having no nonce, it must be at most
// Config.MaxTokenAge old and is accepted once (its SHA-256 is remembered in
// Redis until it expires). The answer is the session, {token, expiresAt},
// as the password login's.
//
// GET /api/v1/sso/config tells the UI and the CLI whether single sign-on is
// on, its display name, its login URL, the issuer and the CLI's client ID.
//
// # Identity
//
// The user's name is the ID token's email (unless email_verified is false),
// else its sub; the groups are its groups claim (Config.GroupsClaim). The
// groups map to roles through the RBAC policy (g, <group>, role:x); a user
// in no mapped group has only policy.default. api/auth refuses names and
// drops groups that are Windlass's own (local accounts, role:*, proj:*).
//
// The issuer's discovery document is read on the first request that needs
// it, and again after a failure, so the API starts before the issuer does.
// Secrets (the client secret, codes, verifiers, ID tokens) are never logged
// nor answered.
package sso
