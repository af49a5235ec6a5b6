// Package api is Windlass's REST API (Echo v5) under /api/v1. Handlers talk
// to Temporal only: an application is created or changed with an
// Update-With-Start of its ApplicationWorkflow, read with the status query,
// listed from the visibility index (search attributes, paginated on the
// server), and synced with the sync update.
//
// Every error is answered by one error handler as an RFC 9457 problem
// document. Authentication and RBAC are not built yet: until they are, bind
// the API to loopback only (the default).
package api
