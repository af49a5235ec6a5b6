package dexserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	dex "github.com/dexidp/dex/server"
	"github.com/dexidp/dex/server/connectors"
	"github.com/dexidp/dex/server/passwords"
)

// Config is what runs in Dex: the `sso.dex` section of the auth config
// file, in Dex's own terms.
type Config struct {
	// Connectors are Dex connectors (github, gitlab, ldap, oidc, saml,
	// microsoft, google, mockPassword ...), each with its Dex config.
	// $VAR and ${VAR} in their string values are replaced by the
	// environment variable, so that secrets stay out of the file.
	Connectors []Connector `json:"connectors,omitempty"`
	// StaticPasswords are Dex's local users; any enables the "local"
	// connector (email and password).
	StaticPasswords []Password `json:"staticPasswords,omitempty"`
	// SkipApprovalScreen leaves out Dex's "grant access" page; default
	// true, as in Argo CD's bundled Dex.
	SkipApprovalScreen *bool `json:"skipApprovalScreen,omitempty"`
}

// Connector is one Dex connector.
type Connector struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Config json.RawMessage `json:"config,omitempty"`
}

// Password is a static user of Dex's local connector.
type Password struct {
	Email string `json:"email"`
	// Hash is the bcrypt hash of the password (cost 10 to 16), or
	// HashFromEnv names the environment variable that holds it.
	Hash        string   `json:"hash,omitempty"`
	HashFromEnv string   `json:"hashFromEnv,omitempty"`
	Username    string   `json:"username,omitempty"`
	UserID      string   `json:"userID,omitempty"`
	Groups      []string `json:"groups,omitempty"`
}

// hash is the password's bcrypt hash, from the file or the environment.
func (p Password) hash() []byte {
	if p.Hash == "" && p.HashFromEnv != "" {
		return []byte(os.Getenv(p.HashFromEnv))
	}
	return []byte(p.Hash)
}

// skipApproval is SkipApprovalScreen with its default.
func (c Config) skipApproval() bool { return c.SkipApprovalScreen == nil || *c.SkipApprovalScreen }

// Validate reports every invalid setting: a connector without type, ID or
// name, of an unknown type, with a config its type does not accept, or with
// the ID of the local connector; a duplicate ID; a static user without an
// email or with a bad hash; and no connector and no static user at all.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(len(c.Connectors) > 0 || len(c.StaticPasswords) > 0, "dex: at least one connector or static password is required")
	var ids []string
	for i, conn := range c.Connectors {
		check(conn.Type != "" && conn.ID != "" && conn.Name != "", "dex: connectors[%d]: type, id and name are required", i)
		check(conn.ID != connectors.LocalConnector, "dex: connectors[%d]: the id %q is the static passwords' connector", i, conn.ID)
		check(!slices.Contains(ids, conn.ID), "dex: connectors[%d]: duplicate id %q", i, conn.ID)
		ids = append(ids, conn.ID)
		if _, err := conn.expanded(); err != nil {
			errs = append(errs, fmt.Errorf("dex: connectors[%d] (%s): %w", i, conn.ID, err))
		}
	}
	var emails []string
	for i, p := range c.StaticPasswords {
		check(p.Email != "", "dex: staticPasswords[%d]: email is required", i)
		check(!slices.Contains(emails, p.Email), "dex: staticPasswords[%d]: duplicate email %q", i, p.Email)
		emails = append(emails, p.Email)
		if err := passwords.CheckCost(p.hash()); err != nil {
			errs = append(errs, fmt.Errorf("dex: staticPasswords[%d] (%s): the hash must be bcrypt of cost 10 to 16: %w", i, p.Email, err))
		}
	}
	return errors.Join(errs...)
}

// expanded is the connector's config with the environment expanded,
// checked against its type's config.
func (c Connector) expanded() ([]byte, error) {
	newConfig, ok := dex.ConnectorsConfig[c.Type]
	if !ok {
		return nil, fmt.Errorf("unknown connector type %q", c.Type)
	}
	raw := c.Config
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, errors.New("config must be an object")
	}
	b, err := json.Marshal(expandEnv(tree))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(newConfig()); err != nil {
		return nil, fmt.Errorf("config of a %s connector: %w", c.Type, err)
	}
	return b, nil
}

// expandEnv replaces $VAR and ${VAR} in every string of a JSON tree.
func expandEnv(v any) any {
	switch v := v.(type) {
	case string:
		return os.ExpandEnv(v)
	case map[string]any:
		for k, child := range v {
			v[k] = expandEnv(child)
		}
	case []any:
		for i, child := range v {
			v[i] = expandEnv(child)
		}
	}
	return v
}
