// Package depends judges an app's dependencies (spec.dependsOn) before a
// sync: each is read from its own app workflow, and it is ready once it
// is Synced and Healthy with no operation running. The app workflow polls
// this activity with a durable timer until every dependency is ready.
package depends
