// Package lastknown keeps the last good answer of reads from a dependency
// and serves it, marked stale, while that dependency is unavailable: the
// API shows the apps' last known status during a workflow engine outage,
// as Argo CD shows its last status when its repo server or cluster is gone.
//
// An Outage records when the dependency first failed and ends at its next
// success. A Cache keeps a bounded number of answers by key, the least
// recently stored going first, and forgets a key whose read fails for
// another reason (the thing is gone, or the caller asked for something
// wrong), so that a deleted app does not come back from memory.
package lastknown
