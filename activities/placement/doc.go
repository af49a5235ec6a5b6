// Package placement decides where a destination cluster's work runs: the
// Temporal task queue of its cluster activities (apply, wait, prune, hooks,
// compare and the drift watch). A registered cluster may name a task queue
// of its own; only the workers polling that queue then touch it, so a slow
// or noisy cluster cannot starve the others. The in-cluster destination and
// clusters without one use the default queue ("").
//
// The workflows ask through the TaskQueue activity, so the answer is
// recorded in their history and replays alike; they cache it for a while
// (see workflows), so a changed mapping applies within minutes.
package placement
