// Package auth authenticates the callers of the REST API: local accounts
// with passwords, login sessions and API tokens, both JWTs, and the Echo
// middleware that checks them. Authorisation (RBAC, 403 for a caller that
// may not do something) is not this package's job; it reads the Principal
// that Middleware stores in the request's context.
//
// # Accounts
//
// The account "admin" always exists (enabled, capability login); the
// Config adds accounts, and may disable admin or change its capabilities.
// An account can log in only when it is enabled, has the login capability
// and has a password. Service.Bootstrap, called once at start, gives admin
// a random password on first start and returns it so that the server can
// print it once; only its bcrypt hash is stored. SetPassword changes a
// password: an account its own, admin any, each proving its own current
// password. A wrong password and an unknown user cost the same bcrypt
// comparison and give the same 401.
//
// # Tokens
//
// Sessions and API tokens are JWTs signed with HS256, with the claims iss
// ("windlass"), sub, groups, jti, iat, nbf, exp and kind (KindSession or
// KindAPIToken), and a kid header naming the signing key. Verification
// accepts HS256 only (so never "none" nor RS256 or HS512 headers), a stored
// key ID only, the issuer only, and the validity period with 30 s of clock
// skew. RotateKey adds a signing key; retired keys verify for the longest
// token lifetime, then are dropped. Replicas re-read the keys every minute,
// and at once (at most every 5 s) for a kid they do not know.
//
// A session lasts Config.SessionLifetime (24 h). Logout revokes it: its
// jti is stored in Revocations (RedisRevocations: key
// windlass:auth:revoked:v1:<jti>, TTL the token's remaining lifetime), which
// every verification asks. When that store cannot be asked, no token is
// accepted: 503 (fail closed). A session also carries the store's
// generation (claim rgen; Redis key windlass:auth:revoked-generation:v1,
// a random value without TTL). A Redis that loses its data (a restart
// without persistence) starts a new generation, and every session issued
// before is refused: users log in again rather than a logged-out token
// working again.
//
// An API token (MintToken) is for an account with the apiKey capability or
// a project role proj:<project>:<role>. Its record (ID = jti, subject,
// description, issue and expiry time, and the SHA-256 of the token, never
// the token) is stored; a token whose record is gone (DeleteToken) is
// refused. API tokens expire: 90 days by default, a year at most, never
// only if Config.AllowNonExpiringAPITokens.
//
// # Secret store
//
//	windlass-jwt                 keys.json: the signing keys (JSON)
//	windlass-account-<name>      passwordHash (bcrypt), passwordChangedAt
//	windlass-apitoken-<id>       sha256, subject, description, issuedAt, expiresAt
//
// The store has no compare-and-swap: Bootstrap writes, reads back and uses
// what was stored, so replicas starting at once agree.
//
// # HTTP
//
// Middleware takes a token from "Authorization: Bearer" or else the
// windlass.token cookie; no or a bad token gives 401 with WWW-Authenticate:
// Bearer. Public routes are let through by a skipper (PublicPaths). Login
// sets windlass.token (HttpOnly) and windlass.csrf (readable by script),
// both SameSite=Strict, Path=/, and Secure over TLS (Config.SecureCookie).
// An unsafe request authenticated by cookie must repeat windlass.csrf in
// the X-CSRF-Token header (403 otherwise); its value is an HMAC of the
// session's jti. Bearer requests need no CSRF token. RegisterRoutes adds
// POST /session (login), DELETE /session (logout) and GET
// /session/userinfo. Errors are *echo.HTTPError values carrying the status
// and a message safe to show, wrapping this package's sentinel errors.
//
// Failed logins are limited per user name and per client address
// (c.RealIP(): configure Echo's IPExtractor behind a proxy) in a sliding
// window, answered 429 with Retry-After. The limiter lives in each replica's
// memory, bounded by Config.LoginRateLimit.MaxEntries.
//
// # Single sign-on
//
// api/sso verifies an identity provider's ID token and calls IssueSession
// with the user's name and groups. The session is a KindSession token with
// the claim sso=true (Principal.SSO): it has no local account, so
// verification checks only that its name is still not reserved (a local
// account's, role:* or proj:*). Its cookies, CSRF token, lifetime, logout
// and revocation are Login's. Reserved or invalid groups from the provider
// are dropped; a reserved user name is refused.
//
// Not yet: sessions stay valid after a password change until they expire
// or are logged out.
package auth
