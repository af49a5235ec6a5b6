// Package roles runs the long-lived roles of the windlass binary: dev
// (everything in one process), server (the REST API), worker (the Temporal
// worker) and temporal (a standalone Temporal server). Each role loads one
// configuration from its flags and the environment, validates it, and
// runs until its context ends.
package roles
