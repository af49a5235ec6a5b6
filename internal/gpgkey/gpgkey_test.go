package gpgkey

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed"
)

func newKey(t *testing.T, name string) (*openpgp.Entity, Key) {
	t.Helper()
	e, pub, err := testbed.NewGPGKey(name)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := Parse(pub)
	if err != nil || len(keys) != 1 {
		t.Fatalf("Parse = %v, %v", keys, err)
	}
	return e, keys[0]
}

// commit makes a commit in a fresh repository, signed by key (nil: not).
func commit(t *testing.T, key *openpgp.Entity) *object.Commit {
	t.Helper()
	repo, err := git.PlainInit(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	who := &object.Signature{Name: "Dev", Email: "dev@example.invalid", When: time.Unix(1700000000, 0)}
	h, err := wt.Commit("change", &git.CommitOptions{Author: who, AllowEmptyCommits: true, SignKey: key})
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParse(t *testing.T) {
	e, k := newKey(t, "alice")
	if k.KeyID != e.PrimaryKey.KeyIdString() || len(k.KeyID) != 16 || k.Owner != "alice <alice@windlass.invalid>" || k.SubType != "ed25519" {
		t.Fatalf("key = %+v", k)
	}
	if again, err := Parse(k.KeyData); err != nil || again[0].Fingerprint != k.Fingerprint {
		t.Fatalf("the stored key data does not parse back: %v", err)
	}
	bad := []struct{ name, data, want string }{
		{"empty", "", "not an ASCII-armored public key"},
		{"garbage", "hello", "not an ASCII-armored public key"},
		{"private", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n-----END PGP PRIVATE KEY BLOCK-----\n", "private key"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.data)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%s) = %v, want %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestNormalizeID(t *testing.T) {
	if id, err := NormalizeID(" 4aee18f83afdeb23 "); err != nil || id != "4AEE18F83AFDEB23" {
		t.Fatalf("NormalizeID = %q, %v", id, err)
	}
	for _, id := range []string{"", "4AEE18F8", "4AEE18F83AFDEB2Z", "0x4AEE18F83AFDEB23"} {
		if _, err := NormalizeID(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("NormalizeID(%q) = %v, want ErrInvalid", id, err)
		}
	}
}

func TestVerify(t *testing.T) {
	alice, aliceKey := newKey(t, "alice")
	bob, bobKey := newKey(t, "bob")
	mallory, _ := newKey(t, "mallory")
	forged := commit(t, alice)
	forged.PGPSignature = commit(t, alice).PGPSignature // alice's signature of another commit
	forged.Message = "changed after signing"
	tests := []struct {
		name    string
		c       *object.Commit
		keys    []Key
		allowed []string
		// signer is the key the error names; want, a part of its reason.
		signer, want string
	}{
		{name: "signed by an allowed key", c: commit(t, alice), keys: []Key{aliceKey, bobKey}, allowed: []string{aliceKey.KeyID}},
		{name: "one of several allowed", c: commit(t, bob), keys: []Key{aliceKey, bobKey}, allowed: []string{aliceKey.KeyID, bobKey.KeyID}},
		{name: "unsigned", c: commit(t, nil), keys: []Key{aliceKey}, allowed: []string{aliceKey.KeyID}, want: "requires a signature by one of " + aliceKey.KeyID},
		{name: "signed by a stored key the project does not allow", c: commit(t, bob), keys: []Key{aliceKey, bobKey},
			allowed: []string{aliceKey.KeyID}, signer: bobKey.KeyID, want: "is not one of the project's signature keys"},
		{name: "signed by a key not in the store", c: commit(t, mallory), keys: []Key{aliceKey}, allowed: []string{aliceKey.KeyID},
			signer: mallory.PrimaryKey.KeyIdString(), want: "not in the GPG key store"},
		{name: "changed after signing", c: forged, keys: []Key{aliceKey}, allowed: []string{aliceKey.KeyID},
			signer: aliceKey.KeyID, want: "does not verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.c, tt.keys, tt.allowed)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Verify = %v", err)
				}
				return
			}
			var u *UntrustedError
			if !errors.As(err, &u) || !errors.Is(err, ErrUntrusted) || failure.TypeOf(err) != "UntrustedCommit" {
				t.Fatalf("Verify = %v, want an UntrustedError", err)
			}
			if u.Commit != tt.c.Hash.String() || u.Signer != tt.signer || !strings.Contains(u.Reason, tt.want) ||
				!strings.Contains(err.Error(), tt.c.Hash.String()) || !strings.Contains(err.Error(), "Dev <dev@example.invalid>") {
				t.Fatalf("Verify = %+v (%v), want signer %q and reason %q", u, err, tt.signer, tt.want)
			}
		})
	}
}
