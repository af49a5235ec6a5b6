// Package gpgkey holds GPG public keys and checks commit signatures
// against them: the source integrity policy of a project's signatureKeys.
//
// Parse reads ASCII-armored public keys, refusing private key material.
// Verify accepts a commit only when it carries an OpenPGP signature that
// verifies with a stored key whose ID (or whose primary key's ID) is one of
// the allowed IDs; otherwise it returns an *UntrustedError naming the
// commit, its committer and the signing key, of the non-retryable type
// UntrustedCommit. Key IDs are the 16 hex digits of the long key ID, as
// Argo CD shows them; comparisons ignore case.
package gpgkey
