// Package dexserver runs a real Dex (github.com/dexidp/dex/server) in the
// Windlass process, on Dex's memory storage, for single sign-on: the
// connectors (GitHub, GitLab, LDAP, OIDC, SAML, mockPassword ...) and
// static users come from the `sso.dex` section of the auth config, in Dex's
// own terms (Config, checked by Validate before anything starts).
//
// Dex knows two clients of Windlass: WebClientID, the API's confidential
// client for the browser's code flow (its secret is made at each start and
// its only redirect URI is the API's callback), and CLIClientID, the public
// client of `windlass login --sso` (the device flow).
//
// # Where it is served
//
// Server is an http.Handler that the API mounts on its own listener at
// Path (/api/dex), as Argo CD does, rather than on a listener of its own:
// one port and one TLS setup to expose, one origin for the browser (the
// login pages, the API's callback and the session cookie are same-site, so
// SameSite cookies work), and the issuer URL follows from the API's
// external URL. The API's OIDC client does not go through the network to
// reach it: Client sends the requests for the issuer's URLs (discovery,
// keys, token exchange) to the handler in process, so the API never has to
// call itself through a load balancer. Browsers and the CLI reach Dex at
// the issuer URL like any other.
//
// # Limits
//
// The state (signing keys, logins and device codes in progress) is in
// memory and per process: a restart ends the logins in progress (sessions
// already issued are Windlass's and stay valid), and with several API
// replicas a login must come back to the replica that started it. For
// replicas behind a load balancer, run Dex on its own with shared storage
// and point Windlass at it as an external issuer (--oidc-issuer).
package dexserver
