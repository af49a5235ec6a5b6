// Package source holds the Git activities: resolving a revision to a commit
// SHA, and the local Git cache that later activities read from.
//
// ResolveRevision lists the repository's references (ls-remote) and picks
// HEAD, a branch, a tag (annotated tags peeled to their commit), a full
// SHA, an abbreviated SHA (expanded against the mirror, fetching when
// needed; ambiguous prefixes fail) or, for a semver range such as v1.2.*,
// ^1.2 or ">=1.0.0 <2.0.0", the highest tag satisfying it. An exact
// reference always wins over a range. With WithRefCache the reference list
// is shared for a few seconds (Redis, keyed by a hash of the URL), so that
// many applications on one repository list it once; ResolveInput.Hard
// bypasses the cache, and a failing cache is logged and passed over.
//
// Checkout keeps one bare mirror per repository on the worker's disk,
// guarded by a lock per repository, and a content-addressed checkout per
// (repository, SHA); while the mirror is empty it fetches the commit alone
// (WithShallowFetch). Submodules are checked out within WithSubmodules,
// and CheckoutIn also limits them to an app's project's sourceRepos.
// Evict removes checkouts by age and total size, least recently used
// first, never one used within the tree grace.
// RevisionMetadata gives a commit's subject, author and date from what the
// worker has read (a checkout, or the mirror), never fetching for it.
//
// Credentials are resolved by reference inside the activity (see
// Credentials): HTTPS basic auth or a bearer token, or an SSH key with the
// host key checked against known_hosts. They never travel through workflow
// inputs or results, and are never logged or put in errors. Errors carry a
// type: repository not found, authentication failed, untrusted host key,
// revision not found and ambiguous revision are not retryable; an
// unreachable server is.
//
// A connection over SSH or HTTP(S) fails once the server stays silent for
// the net timeout (DefaultNetTimeout, WithNetTimeout): on dial, the TLS or
// SSH handshake, and every read or write, with a *TimeoutError; a transfer
// that keeps moving is not cut off. Fetches ask for progress so that a
// server preparing a large pack keeps talking.
package source
