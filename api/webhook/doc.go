// Package webhook receives Git push events from GitHub, GitLab and Bitbucket
// (Cloud, and Server/Data Center) on POST /api/webhook and asks every
// application whose source repository and target revision match the push to
// refresh.
//
// # Verification
//
// Nothing in a delivery is trusted before it is verified, and unsigned
// deliveries are never accepted:
//
//   - GitHub: X-Hub-Signature-256 must be "sha256=" followed by the hex
//     HMAC-SHA256 of the raw body, keyed with Secrets.GitHub.
//   - GitLab: X-Gitlab-Token must equal Secrets.GitLab.
//   - Bitbucket Cloud and Server/Data Center: X-Hub-Signature must be
//     "sha256=" followed by the hex HMAC-SHA256 of the raw body, keyed with
//     Secrets.Bitbucket.
//
// Comparisons are constant-time. A missing or wrong signature, or a provider
// whose secret is not configured, is answered 401 and nothing else happens.
// The provider is told by the event header (X-GitHub-Event, X-Gitlab-Event or
// X-Event-Key); a request with none of them is answered 400.
//
// # Events
//
//   - GitHub "push" (JSON or form-encoded), GitLab "Push Hook", "Tag Push
//     Hook" and "System Hook" push events, Bitbucket Cloud "repo:push" and
//     Bitbucket Server "repo:refs_changed" are pushes. A Bitbucket push may
//     update several refs; each is a Push.
//   - GitHub "ping" and Bitbucket Server "diagnostics:ping" are answered 200
//     and refresh nothing.
//   - Any other verified event is answered 202 with an "ignored" message and
//     refreshes nothing. It is not a 4xx: the sender did nothing wrong, and
//     GitLab disables hooks that keep failing.
//
// # Limits and errors
//
// The body is read up to Config.MaxBytes (default 1 MiB); a larger body is
// answered 413. A push payload that is not JSON, or lacks its ref or
// repository URL, is answered 400. If the Finder fails the answer is 503.
// Errors are returned to Echo as *echo.HTTPError, so the API's error handler
// renders them as RFC 9457 problems.
//
// # Matching
//
// Every repository URL of a push (web, HTTP clone, SSH) is normalised with
// appspec.NormalizeRepoURL, and the Finder is asked once per distinct normalised URL
// for the applications that have a source on it; Finder implementations must
// normalise their applications' repository URLs the same way. An application
// matches when one of its sources' target revisions matches the push by
// RevisionMatches (Argo CD semantics: HEAD follows the default branch, a
// branch or tag follows itself, a semver constraint follows the tags that
// satisfy it, a commit SHA is pinned). An application whose App.Paths are
// set (its manifest-generate-paths annotation) matches only a push that
// changes a file under one of them; a push whose payload lists no files
// (Bitbucket, a new tag) matches as before.
//
// # Response
//
// Each matching application is refreshed once, however many URL forms or refs
// matched it, in ID order. One failed refresh does not stop the others; it is
// logged and reported. The answer is 200 with
//
//	{"refreshed": ["app/default/guestbook"], "failed": ["app/default/broken"]}
//
// where both lists are sorted and "failed" is left out when empty. Refreshes
// run on a context that outlives the request (bounded by a timeout), so a
// provider that hangs up early does not cut the fan-out short.
//
// Logs never hold a secret, a token or a signature.
package webhook
