package gpgkey

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/windlass-cd/windlass/internal/failure"
)

// ErrUntrusted is a commit that the signature policy refuses. Retrying
// cannot fix it: the commit must be signed again, or the key allowed.
var ErrUntrusted = failure.Permanent("UntrustedCommit", "commit signature not trusted")

// UntrustedError names the refused commit, its committer and the key that
// signed it ("" for an unsigned commit).
type UntrustedError struct {
	Commit    string
	Committer string
	Signer    string
	Reason    string
}

func (e *UntrustedError) Error() string {
	by := "not signed"
	if e.Signer != "" {
		by = "signed by key " + e.Signer
	}
	return fmt.Sprintf("%s: commit %s (committer %s) is %s: %s", ErrUntrusted, e.Commit, e.Committer, by, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUntrusted) hold.
func (e *UntrustedError) Unwrap() error { return ErrUntrusted }

// Verify checks that c is signed by a key of keys whose ID is in allowed.
// keys is the store's content; allowed, the project's signatureKeys.
func Verify(c *object.Commit, keys []Key, allowed []string) error {
	fail := func(signer, reason string) error {
		return &UntrustedError{Commit: c.Hash.String(), Committer: c.Committer.Name + " <" + c.Committer.Email + ">", Signer: signer, Reason: reason}
	}
	if strings.TrimSpace(c.PGPSignature) == "" {
		return fail("", "the project requires a signature by one of "+strings.Join(allowed, ", "))
	}
	signer, err := issuer(c.PGPSignature)
	if err != nil {
		return fail("", "its signature cannot be read: "+err.Error())
	}
	key, ok := findKey(keys, signer)
	switch {
	case !ok:
		return fail(signer, "the key is not in the GPG key store")
	case !slices.Contains(allowed, key.KeyID) && !slices.Contains(allowed, signer):
		return fail(signer, fmt.Sprintf("%s (%s) is not one of the project's signature keys (%s)", key.KeyID, key.Owner, strings.Join(allowed, ", ")))
	}
	if _, err := c.Verify(key.KeyData); err != nil {
		return fail(signer, "the signature does not verify: "+err.Error())
	}
	return nil
}

// issuer reads the long key ID that made an armored signature.
func issuer(armored string) (string, error) {
	block, err := armor.Decode(strings.NewReader(armored))
	if err != nil {
		return "", err
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		return "", err
	}
	sig, ok := p.(*packet.Signature)
	if !ok {
		return "", errors.New("not a signature packet")
	}
	switch {
	case sig.IssuerKeyId != nil:
		return fmt.Sprintf("%016X", *sig.IssuerKeyId), nil
	case len(sig.IssuerFingerprint) >= 8:
		return strings.ToUpper(fmt.Sprintf("%x", sig.IssuerFingerprint[len(sig.IssuerFingerprint)-8:])), nil
	}
	return "", errors.New("the signature names no key")
}

// findKey finds the key of keys that id (a key or subkey ID) belongs to.
func findKey(keys []Key, id string) (Key, bool) {
	for _, k := range keys {
		if slices.Contains(k.IDs(), id) {
			return k, true
		}
	}
	return Key{}, false
}
