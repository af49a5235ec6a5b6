// Package source holds the Git activities: resolving a revision (branch,
// tag, full SHA or HEAD) to a commit SHA with ls-remote, and the local Git
// cache that later activities read from: one bare mirror per repository on
// the worker's disk, guarded by a lock per repository, and a content-addressed
// checkout per (repository, SHA).
//
// Credentials are resolved by reference inside the activity (see
// Credentials); they never travel through workflow inputs or results and are
// never logged. Errors carry a type: repository not found, authentication
// failed and revision not found are not retryable; an unreachable server is.
package source
