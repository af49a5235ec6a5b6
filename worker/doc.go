// Package worker wires Windlass's workflows and activities into a Temporal
// worker: it builds each activity struct from its dependencies (Git cache,
// manifest cache in Redis, cluster clients), registers everything under the
// constant names, and lists the search attributes the namespace needs.
package worker
