package testbed

import (
	"bytes"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// NewGPGKey makes a fresh Ed25519 GPG key for name and returns it (with
// its private key, to sign commits) and its ASCII-armored public key.
func NewGPGKey(name string) (*openpgp.Entity, string, error) {
	e, err := openpgp.NewEntity(name, "", name+"@windlass.invalid", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return nil, "", fmt.Errorf("new gpg key: %w", err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, "", err
	}
	if err := e.Serialize(w); err != nil {
		return nil, "", fmt.Errorf("export gpg key: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return e, buf.String(), nil
}
