// Package rollout carries out the steps of a progressive rollout
// (RollingSync) on the apps it selects: Sync asks an app for a sync, once
// per rollout attempt, and Check judges whether each app's sync has left
// it Synced and Healthy at the synced revision, or has failed.
//
// Sync is idempotent: the request carries a key (the initiator) that the
// app records with the sync, and a retry after a worker's death finds the
// sync it already started instead of starting another.
package rollout
