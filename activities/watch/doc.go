// Package watch holds the drift-detection activities. Watch keeps dynamic
// informers on the kinds a cluster's applications manage and, when a
// tracked object changes by anyone but Windlass's own field manager (or is
// deleted), signals a refresh to the owning application, debounced per
// application. It runs as one long heartbeating activity: if its worker
// dies, the heartbeat times out and Temporal runs it on another worker.
//
// SweepSelfHeal is the safety net for missed events: it lists the running
// applications with selfHeal through visibility and signals each a refresh.
package watch
