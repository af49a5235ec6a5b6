// Package temporalx connects Windlass to Temporal and, for development and
// single-node installs, runs a Temporal server inside the Windlass process.
//
// # Embedded dev server
//
// StartDevServer runs the frontend, history, matching and worker services in
// process, bound to loopback (static membership, no ringpop), with SQLite
// persistence in <DataDir>/temporal.db. The contract:
//
//   - The database file is opened with journal_mode=wal and
//     synchronous=normal (the default rollback journal is about 5x slower).
//   - A new database is created with 4 history shards. The shard count is
//     fixed at creation: an existing database keeps the count it was made with.
//   - Visibility lives in the same SQLite file.
//   - Dynamic config sets history.queueReaderStuckCriticalAttempts=0, which
//     stops the "reader stuck" detector from delaying timers by minutes.
//   - The namespace is registered on every start (a no-op when it exists),
//     with a 7-day retention. Custom search attributes are registered on every
//     start too; those already present are skipped, and one present with a
//     different type is an error.
//   - A restart on the same DataDir keeps workflows, histories, namespaces and
//     search attributes; running workflows carry on.
//   - The Temporal Web UI (github.com/temporalio/ui-server) is served on
//     UIAddr unless UIAddr is "" or "off".
//   - The server's own logs go to the given slog.Logger, at warn level and
//     above only.
//   - Two servers must not share a DataDir: nothing locks the file.
//
// Stop stops the UI and then the server. Within one process, a later
// StartDevServer on the same DataDir reuses the SQLite connection the server's
// plugin keeps open for the life of the process.
//
// Built with -tags nodevserver (the image's production build of windlass,
// which runs the server and the worker), the package leaves the embedded
// server out, and with it half the binary and half of what a process maps
// at start: StartDevServer then returns ErrDevServerNotBuiltIn and
// DevServerBuiltIn is false.
//
// # Client
//
// Dial connects an SDK client to any Temporal frontend, retrying until the
// context ends.
package temporalx
