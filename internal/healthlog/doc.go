// Package healthlog records the health transitions of apps and their
// resources in Redis, outside workflow history: each app keeps its
// current health per resource (with the time it last changed, Argo CD's
// lastTransitionTime) and a bounded list of transitions, newest first.
//
// A compare records what it assessed (Store.Record); the API reads the
// list (Store.History) and the times (Store.Current). A record is one
// atomic script over two keys that share a hash slot, so it works on a
// Redis Cluster too.
package healthlog
