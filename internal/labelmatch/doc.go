// Package labelmatch matches app labels against the matchExpressions of
// a progressive rollout's steps: In, NotIn, Exists and DoesNotExist, as
// Kubernetes label selectors read them. A step without expressions
// matches every app. It is pure, so workflow code may call it.
package labelmatch
