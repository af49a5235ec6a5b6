// Package api is Windlass's REST API (Echo v5) under /api/v1. Handlers talk
// to Temporal only for applications: an application is created or changed
// with an Update-With-Start of its ApplicationWorkflow (from Windlass's own
// spec or an Argo CD Application), read with the status query, listed from
// the visibility index (search attributes, filtered and paginated on the
// server) and streamed over Server-Sent Events. Projects, repositories and
// clusters live in internal/settings (the secret store); credentials are
// write-only.
//
// Every request except the public routes (healthz, login, single sign-on,
// the Git webhook, the OpenAPI document) is authenticated by api/auth
// (session or API token: 401 otherwise) and every handler checks its permission with api/rbac
// (403), in Argo CD's policy format. List endpoints keep what the caller may
// get. Every error is answered by one error handler as an RFC 9457 problem
// document.
//
// Single sign-on (api/sso) adds /api/v1/sso/*, and an in-process Dex
// (internal/dexserver), when configured, is served at /api/dex on the same
// listener, ahead of the API's routes and middleware (Options.Dex).
package api
