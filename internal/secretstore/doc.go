// Package secretstore keeps Windlass's own secrets: the JWT signing keys,
// the bcrypt hash of local account passwords, the hashes of API tokens, and
// the credentials of registered repositories and clusters. A secret is a
// named map of byte values. The API writes them; activities read them by
// name at run time, so a credential never travels in a workflow input,
// result or history.
//
// Two stores implement Store: Memory (tests, and a single process) and
// Kubernetes (one Secret per name in the management namespace, shared by
// every server and worker replica). The Kubernetes store's errors wrap
// ErrUnreachable when the API server does not answer.
package secretstore
