// Package deps proves that the libraries Windlass is built on resolve,
// build and work together in one module, by using each once in a test. The
// features that use them for real (Helm and Kustomize rendering, Lua health,
// RBAC, SSO) come in later issues; until then this keeps go.mod honest.
package deps
