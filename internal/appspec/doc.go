// Package appspec defines the Application spec that users write (and that the
// API, the CLI and the workflows exchange), its validation, and the status
// values an application reports. It is pure: no I/O, safe to use from
// workflow code.
//
// The spec mirrors the subset of Argo CD's argoproj.io/v1alpha1 Application
// that Windlass implements so far; a field that is not here is not supported.
package appspec
