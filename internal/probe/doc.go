// Package probe serves the liveness and readiness endpoints of a role, and
// routes the operational paths (/healthz, /readyz, /metrics) in front of
// the role's own handler.
//
// /healthz answers 200 while the process serves HTTP: a failing dependency
// must not get a pod restarted. /readyz runs every check in parallel, each
// bounded by a timeout, and answers 200 when all pass, 503 otherwise, with
// a JSON body naming each check's outcome; ?exclude=NAME leaves a check
// out, as the kube-apiserver's /readyz does. Cached reuses a check's
// outcome for a while, so that frequent probes stay cheap. Check errors
// are shown as they are, so checks must not put secrets in their errors.
package probe
