package gpgkey

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// ErrInvalid is key data that is not one or more armored public keys.
var ErrInvalid = errors.New("invalid GPG key")

// Key is a public key of the keys store.
type Key struct {
	// KeyID is the long key ID of the primary key (16 upper-case hex).
	KeyID string `json:"keyID"`
	// Fingerprint is the primary key's fingerprint (upper-case hex).
	Fingerprint string `json:"fingerprint"`
	// Owner is the key's first user ID, sorted by name.
	Owner string `json:"owner,omitempty"`
	// SubType is the public key algorithm (rsa4096, ed25519, ...).
	SubType string `json:"subType,omitempty"`
	// SubKeyIDs are the long IDs of the subkeys, which may sign too.
	SubKeyIDs []string `json:"subKeyIDs,omitempty"`
	// KeyData is the ASCII-armored public key.
	KeyData string `json:"keyData"`
}

var keyIDPattern = regexp.MustCompile(`^[0-9A-F]{16}$`)

// NormalizeID returns id in upper case and checks that it is a long key
// ID (16 hex digits).
func NormalizeID(id string) (string, error) {
	up := strings.ToUpper(strings.TrimSpace(id))
	if !keyIDPattern.MatchString(up) {
		return "", fmt.Errorf("%w: key ID %q is not 16 hex digits", ErrInvalid, id)
	}
	return up, nil
}

// Parse reads one or more ASCII-armored public keys. Private keys are
// refused: the store holds public keys only.
func Parse(armored string) ([]Key, error) {
	if strings.Contains(armored, "PRIVATE KEY BLOCK") {
		return nil, fmt.Errorf("%w: this is a private key; give the public key (gpg --armor --export ID)", ErrInvalid)
	}
	list, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("%w: not an ASCII-armored public key: %w", ErrInvalid, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: no key found", ErrInvalid)
	}
	out := make([]Key, 0, len(list))
	for _, e := range list {
		if e.PrivateKey != nil {
			return nil, fmt.Errorf("%w: this is a private key; give the public key", ErrInvalid)
		}
		k, err := fromEntity(e)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func fromEntity(e *openpgp.Entity) (Key, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return Key{}, err
	}
	if err := e.Serialize(w); err != nil {
		return Key{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := w.Close(); err != nil {
		return Key{}, err
	}
	buf.WriteByte('\n')
	pk := e.PrimaryKey
	k := Key{KeyID: pk.KeyIdString(), Fingerprint: strings.ToUpper(fmt.Sprintf("%x", pk.Fingerprint)),
		SubType: algorithm(pk), KeyData: buf.String()}
	names := make([]string, 0, len(e.Identities))
	for n := range e.Identities {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 0 {
		k.Owner = names[0]
	}
	for _, s := range e.Subkeys {
		k.SubKeyIDs = append(k.SubKeyIDs, s.PublicKey.KeyIdString())
	}
	return k, nil
}

// algorithm names pk's algorithm as gpg --list-keys does, roughly.
func algorithm(pk *packet.PublicKey) string {
	bits, _ := pk.BitLength()
	switch pk.PubKeyAlgo {
	case packet.PubKeyAlgoRSA, packet.PubKeyAlgoRSASignOnly:
		return fmt.Sprintf("rsa%d", bits)
	case packet.PubKeyAlgoEdDSA, packet.PubKeyAlgoEd25519:
		return "ed25519"
	case packet.PubKeyAlgoEd448:
		return "ed448"
	case packet.PubKeyAlgoECDSA:
		return fmt.Sprintf("nistp%d", bits)
	case packet.PubKeyAlgoDSA:
		return fmt.Sprintf("dsa%d", bits)
	}
	return fmt.Sprintf("algo%d", pk.PubKeyAlgo)
}

// IDs are the key IDs a signature by k may carry: its own and its
// subkeys'.
func (k Key) IDs() []string { return append([]string{k.KeyID}, k.SubKeyIDs...) }
