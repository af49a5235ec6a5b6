package auth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

// apiTokenSecretPrefix names an API token's record: windlass-apitoken-<id>,
// holding the data keys below. The token itself is not stored, only its
// SHA-256.
const (
	apiTokenSecretPrefix = "windlass-apitoken-"
	tokenHashKey         = "sha256"
	tokenSubjectKey      = "subject"
	tokenDescriptionKey  = "description"
	tokenIssuedAtKey     = "issuedAt"
	tokenExpiresAtKey    = "expiresAt"
)

// maxDescriptionBytes bounds an API token's description.
const maxDescriptionBytes = 256

// TokenOptions describe an API token to mint.
type TokenOptions struct {
	// ID names the token (a DNS-1123 label, unique); empty picks a random
	// one. It is the token's jti.
	ID string
	// Description says what the token is for (at most 256 bytes).
	Description string
	// ExpiresIn is the token's lifetime: 0 means
	// Config.APITokenDefaultLifetime; more than Config.APITokenMaxLifetime
	// is refused.
	ExpiresIn time.Duration
	// NoExpiry mints a token that never expires, which is refused unless
	// Config.AllowNonExpiringAPITokens is set. ExpiresIn must then be 0.
	NoExpiry bool
}

// TokenInfo describes an API token. It never holds the token.
type TokenInfo struct {
	ID          string    `json:"id"`
	Subject     string    `json:"subject"`
	Description string    `json:"description,omitempty"`
	IssuedAt    time.Time `json:"issuedAt"`
	// ExpiresAt is zero for a token that never expires.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// MintToken mints an API token for subject: an enabled account with the
// apiKey capability, or a project role proj:<project>:<role> (whose
// existence the caller checks, as it checks that the caller may mint). It
// returns the token, which is shown only this once. Deleting the token's
// record (DeleteToken) revokes it.
func (s *Service) MintToken(ctx context.Context, subject string, opts TokenOptions) (string, TokenInfo, error) {
	if err := s.checkSubject(subject, KindAPIToken); err != nil {
		return "", TokenInfo{}, err
	}
	if len(opts.Description) > maxDescriptionBytes {
		return "", TokenInfo{}, fail(ErrInvalidArgument, fmt.Sprintf("the description must be at most %d bytes long", maxDescriptionBytes))
	}
	exp, err := s.tokenExpiry(opts)
	if err != nil {
		return "", TokenInfo{}, err
	}
	id := opts.ID
	if id == "" {
		id = newTokenID()
	}
	if !dnsLabel.MatchString(id) {
		return "", TokenInfo{}, fail(ErrInvalidArgument, "the token ID must be a DNS-1123 label")
	}
	switch _, err := s.secrets.Get(ctx, apiTokenSecretPrefix+id); {
	case err == nil:
		return "", TokenInfo{}, fail(ErrConflict, "an API token with this ID exists")
	case !errors.Is(err, secretstore.ErrNotFound):
		return "", TokenInfo{}, fmt.Errorf("read api token %s: %w", id, err)
	}
	tok, err := s.issue(ctx, subject, nil, KindAPIToken, id, exp)
	if err != nil {
		return "", TokenInfo{}, err
	}
	info := TokenInfo{ID: id, Subject: subject, Description: opts.Description, IssuedAt: tok.issuedAt, ExpiresAt: tok.expiresAt}
	data := map[string][]byte{
		tokenHashKey:        []byte(tokenHash(tok.token)),
		tokenSubjectKey:     []byte(subject),
		tokenDescriptionKey: []byte(info.Description),
		tokenIssuedAtKey:    []byte(info.IssuedAt.Format(time.RFC3339)),
	}
	if !info.ExpiresAt.IsZero() {
		data[tokenExpiresAtKey] = []byte(info.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if err := s.secrets.Put(ctx, apiTokenSecretPrefix+id, data); err != nil {
		return "", TokenInfo{}, fmt.Errorf("store api token %s: %w", id, err)
	}
	s.log.Info(msgTokenMinted, "id", id, "subject", subject, "expires_at", info.ExpiresAt)
	return tok.token, info, nil
}

// tokenExpiry is the expiry of a token minted now with opts; zero for none.
func (s *Service) tokenExpiry(opts TokenOptions) (time.Time, error) {
	switch {
	case opts.NoExpiry && !s.cfg.AllowNonExpiringAPITokens:
		return time.Time{}, fail(ErrInvalidArgument, "API tokens must expire")
	case opts.NoExpiry && opts.ExpiresIn != 0:
		return time.Time{}, fail(ErrInvalidArgument, "a token without expiry takes no lifetime")
	case opts.NoExpiry:
		return time.Time{}, nil
	case opts.ExpiresIn < 0 || opts.ExpiresIn > s.cfg.APITokenMaxLifetime:
		return time.Time{}, fail(ErrInvalidArgument, "the token lifetime must be positive and at most "+s.cfg.APITokenMaxLifetime.String())
	}
	return s.now().Add(cmp.Or(opts.ExpiresIn, s.cfg.APITokenDefaultLifetime)), nil
}

// ListTokens lists the API tokens of subject (all tokens when it is ""),
// expired ones included, by issue time.
func (s *Service) ListTokens(ctx context.Context, subject string) ([]TokenInfo, error) {
	names, err := s.secrets.List(ctx, apiTokenSecretPrefix)
	if err != nil {
		return nil, fmt.Errorf("list api tokens: %w", err)
	}
	out := []TokenInfo{}
	for _, name := range names {
		data, err := s.secrets.Get(ctx, name)
		if errors.Is(err, secretstore.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read api token: %w", err)
		}
		info := TokenInfo{
			ID:          strings.TrimPrefix(name, apiTokenSecretPrefix),
			Subject:     string(data[tokenSubjectKey]),
			Description: string(data[tokenDescriptionKey]),
		}
		if subject != "" && info.Subject != subject {
			continue
		}
		info.IssuedAt, _ = time.Parse(time.RFC3339, string(data[tokenIssuedAtKey]))
		if b := data[tokenExpiresAtKey]; len(b) > 0 {
			info.ExpiresAt, _ = time.Parse(time.RFC3339, string(b))
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b TokenInfo) int {
		return cmp.Or(a.IssuedAt.Compare(b.IssuedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// DeleteToken deletes the API token id's record, which revokes the token.
func (s *Service) DeleteToken(ctx context.Context, id string) error {
	if !dnsLabel.MatchString(id) {
		return fail(ErrNotFound, "API token not found")
	}
	err := s.secrets.Delete(ctx, apiTokenSecretPrefix+id)
	if errors.Is(err, secretstore.ErrNotFound) {
		return fail(ErrNotFound, "API token not found")
	}
	if err != nil {
		return fmt.Errorf("delete api token %s: %w", id, err)
	}
	s.log.Info(msgTokenDeleted, "id", id)
	return nil
}

// checkAPIToken checks that an API token's record is stored, holds the
// token's hash and names its subject.
func (s *Service) checkAPIToken(ctx context.Context, token string, c *claims) error {
	data, err := s.secrets.Get(ctx, apiTokenSecretPrefix+c.ID)
	if errors.Is(err, secretstore.ErrNotFound) {
		return fail(ErrInvalidToken, "API token deleted")
	}
	if err != nil {
		s.log.Error(msgTokenCheckFailed, "id", c.ID, "error", err)
		return unavailable("cannot check the API token", "the secret store is unavailable", err)
	}
	want := data[tokenHashKey]
	if subtle.ConstantTimeCompare([]byte(tokenHash(token)), want) != 1 || string(data[tokenSubjectKey]) != c.Subject {
		return fail(ErrInvalidToken, "invalid token")
	}
	return nil
}

// tokenHash is the hex SHA-256 of a token.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
