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
//     and its retention (DefaultRetention, 30 days, unless set) and archival
//     are brought to the configured ones. Custom search attributes are
//     registered on every start too; those already present are skipped, and
//     one present with a different type is an error.
//   - With Archival set, Temporal's filestore (file://) or s3store (s3://)
//     archiver copies each closed workflow's history and visibility record
//     to the archive, and the frontend reads them back after retention. A
//     file archive that cannot be written is refused before anything
//     starts; a namespace already archiving to another URI is refused too,
//     as Temporal never moves an archive. Namespaces may take a retention
//     down to one second, and deletions are spread over a tenth of it.
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
// # Cluster member on PostgreSQL
//
// StartClusterServer runs one process of a Temporal cluster whose state is
// in PostgreSQL, for production. The contract:
//
//   - Both stores use the server's postgres12_pgx plugin: the default store
//     in the DSN's database, visibility (advanced visibility: custom search
//     attributes, no Elasticsearch) in <database>_visibility. Missing
//     databases are created through the maintenance database "postgres".
//   - Schemas are created and upgraded from the schema files embedded in the
//     server module, with its schema tool library, under a PostgreSQL
//     advisory lock: members that start together take turns. A schema newer
//     than this server knows is refused (ErrSchemaTooNew, versions named).
//   - The history shard count is recorded at the first start; a start with
//     another count is refused (ErrShardCountChanged). The server alone
//     would only log a warning and go on with the recorded count.
//   - Unreachable PostgreSQL (ErrPostgresUnreachable) and a refused login
//     (ErrPostgresAuth) are told apart at once; errors name the DSN without
//     the password, and a DSN holding a password is refused.
//   - Members find each other through ringpop, seeded from the
//     cluster_membership table, on 127.0.0.1. Each picks its own free
//     ports, below 32768 (the table's rpc_port is a smallint), and serves
//     the services it is given; the ring decides which member owns which
//     shard and queue partition. Internal clients find a frontend through
//     membership.
//   - The namespace, its retention and archival, and the search attributes
//     are registered at every start, as by StartDevServer. The archive is
//     the namespace's, one for the cluster: members give the same URIs.
//   - A stopped member does not rejoin the ring when started again in the
//     same process; run one member per process.
//
// # Client
//
// Dial connects an SDK client to any Temporal frontend, retrying until the
// context ends.
package temporalx
