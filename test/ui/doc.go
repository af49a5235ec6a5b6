// Package ui tests the web UI in a real browser: TestBrowser starts the
// test bed (Kubernetes control plane, Redis, Git server), an embedded
// Temporal, a worker and the API serving the embedded UI (as `windlass
// dev` does), then runs browser.mjs, a playwright-core script driving
// Debian's chromium through login, the live list, the resource tree, a
// diff after drift, a sync, a resource action, editing the spec and its
// parameters, a pod's live object and a workload's logs, a rollback and a
// read-only user. It fails on
// the script's failure. TestBrowserLayout runs layout.mjs: long names and
// statuses show whole in the tree, event messages keep their width, and
// the list marks a failed last sync. TestBrowserAppSets runs appsets.mjs
// over a real set and its rollout: the Sets page, a set's page and the
// rollout halted by a Degraded app, read-only, abort and delete.
// TestListScale (WINDLASS_UI_SCALE=N) measures the first page of the list
// with N applications.
package ui
