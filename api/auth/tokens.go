package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is the iss claim of every token Windlass issues and accepts.
const Issuer = "windlass"

// Token kinds (the kind claim).
const (
	// KindSession is a login session.
	KindSession = "session"
	// KindAPIToken is an API token, valid only while its record is stored.
	KindAPIToken = "apiToken"
)

// leeway is the clock skew allowed between replicas when checking exp,
// nbf and iat. Revocation marks outlive exp by as much.
const leeway = 30 * time.Second

// claims are the claims of a Windlass JWT.
type claims struct {
	jwt.RegisteredClaims
	Groups []string `json:"groups,omitempty"`
	Kind   string   `json:"kind"`
	// SSO marks a session of a user authenticated by an identity
	// provider (IssueSession), who has no local account.
	SSO bool `json:"sso,omitempty"`
	// RevocationGen is the revocation store's generation when a session
	// was issued (Revocations.Generation).
	RevocationGen string `json:"rgen,omitempty"`
}

// issued is a signed token.
type issued struct {
	token     string
	jti       string
	issuedAt  time.Time
	expiresAt time.Time // zero: never
	key       signingKey
}

// issue signs a token with the current key. A zero exp means no expiry.
func (s *Service) issue(ctx context.Context, subject string, groups []string, kind, jti string, exp time.Time) (issued, error) {
	return s.issueClaims(ctx, claims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: subject, ID: jti},
		Groups:           groups,
		Kind:             kind,
	}, exp)
}

// issueClaims signs c, with the issuer, issue time and validity period
// set, with the current key. A zero exp means no expiry.
func (s *Service) issueClaims(ctx context.Context, c claims, exp time.Time) (issued, error) {
	if c.Kind == KindSession {
		gen, err := s.revocationGeneration(ctx)
		if err != nil {
			return issued{}, err
		}
		c.RevocationGen = gen
	}
	now := s.now()
	key, err := s.keys.current(ctx, now)
	if err != nil {
		return issued{}, fmt.Errorf("issue token: %w", err)
	}
	jti := c.ID
	c.Issuer = Issuer
	c.IssuedAt = jwt.NewNumericDate(now)
	c.NotBefore = jwt.NewNumericDate(now)
	if !exp.IsZero() {
		c.ExpiresAt = jwt.NewNumericDate(exp)
		exp = c.ExpiresAt.Time.UTC() // as precise as the claim
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["kid"] = key.ID
	signed, err := t.SignedString(key.Secret)
	if err != nil {
		return issued{}, fmt.Errorf("sign token: %w", err)
	}
	return issued{token: signed, jti: jti, issuedAt: c.IssuedAt.Time.UTC(), expiresAt: exp, key: key}, nil
}

// newTokenID is a random jti: 26 characters of [a-z2-7], 130 bits.
func newTokenID() string { return strings.ToLower(rand.Text()) }

// verified is a token that passed Verify.
type verified struct {
	Principal
	key signingKey
}

// Verify checks a token: its signature (HS256 with a known key ID only),
// issuer, validity period, kind, account, API token record and revocation.
// It returns the principal, or an error with status 401 (ErrInvalidToken)
// or 503 (ErrUnavailable).
func (s *Service) Verify(ctx context.Context, token string) (Principal, error) {
	v, err := s.verify(ctx, token)
	return v.Principal, err
}

func (s *Service) verify(ctx context.Context, token string) (verified, error) {
	var (
		c       claims
		key     signingKey
		keysErr error // the keys could not be read
	)
	_, err := s.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if t.Method != jwt.SigningMethodHS256 {
			return nil, fmt.Errorf("signing method %s not accepted", t.Method.Alg())
		}
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("no kid header")
		}
		k, err := s.keys.byID(ctx, kid, s.now())
		if err != nil {
			if !errors.Is(err, errUnknownKey) {
				keysErr = err
			}
			return nil, err
		}
		key = k
		return k.Secret, nil
	})
	switch {
	case keysErr != nil:
		return verified{}, unavailable("cannot check the token", "the signing keys are unavailable", keysErr)
	case errors.Is(err, jwt.ErrTokenExpired):
		return verified{}, fail(ErrInvalidToken, "token expired", err)
	case err != nil:
		return verified{}, fail(ErrInvalidToken, "invalid token", err)
	}
	if err := s.checkClaims(ctx, token, &c); err != nil {
		return verified{}, err
	}
	if err := s.checkRevoked(ctx, &c); err != nil {
		return verified{}, err
	}
	p := Principal{Name: c.Subject, Groups: c.Groups, TokenID: c.ID, Kind: c.Kind, SSO: c.SSO}
	if c.ExpiresAt != nil {
		p.ExpiresAt = c.ExpiresAt.Time.UTC()
	}
	return verified{Principal: p, key: key}, nil
}

// checkClaims checks what the JWT library does not: the kind, the
// subject's account or project role, and an API token's record.
func (s *Service) checkClaims(ctx context.Context, token string, c *claims) error {
	invalid := func(msg string) error { return fail(ErrInvalidToken, msg) }
	switch {
	case c.ID == "" || c.Subject == "":
		return invalid("invalid token")
	case c.Kind != KindSession && c.Kind != KindAPIToken:
		return invalid("invalid token")
	case c.ExpiresAt == nil && !(c.Kind == KindAPIToken && s.cfg.AllowNonExpiringAPITokens):
		return invalid("invalid token")
	case c.SSO:
		// No account to check; the name still may not be one's.
		if c.Kind != KindSession || s.reservedName(c.Subject) {
			return invalid("invalid token")
		}
		return nil
	}
	if err := s.checkSubject(c.Subject, c.Kind); err != nil {
		return invalid("token of a disabled or unknown account")
	}
	if c.Kind == KindAPIToken {
		return s.checkAPIToken(ctx, token, c)
	}
	return nil
}

// checkRevoked fails closed: when the revocation store cannot be asked,
// no token is accepted, and a session of another generation of the store
// (issued before it lost its marks) counts as revoked. API tokens are
// revoked by deleting their stored record, which no restart loses.
func (s *Service) checkRevoked(ctx context.Context, c *claims) error {
	gen := ""
	if c.Kind == KindSession {
		if gen = c.RevocationGen; gen == "" {
			return fail(ErrInvalidToken, "token revoked")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RevocationTimeout)
	defer cancel()
	revoked, err := s.revocations.Revoked(ctx, c.ID, gen)
	if err != nil {
		s.log.Error(msgRevocationCheckFailed, "error", err)
		return unavailable("cannot check whether the token is revoked", "the revocation store is unavailable", err)
	}
	if revoked {
		return fail(ErrInvalidToken, "token revoked")
	}
	return nil
}

// revocationGeneration is the revocation store's generation, which a new
// session carries.
func (s *Service) revocationGeneration(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RevocationTimeout)
	defer cancel()
	gen, err := s.revocations.Generation(ctx)
	if err != nil {
		s.log.Error(msgRevocationCheckFailed, "error", err)
		return "", unavailable("cannot issue a session", "the revocation store is unavailable", err)
	}
	return gen, nil
}

// revoke marks jti revoked until it has expired for every replica.
func (s *Service) revoke(ctx context.Context, jti string, exp time.Time) error {
	until := exp
	if !until.IsZero() {
		until = until.Add(leeway)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RevocationTimeout)
	defer cancel()
	if err := s.revocations.Revoke(ctx, jti, until); err != nil {
		s.log.Error(msgRevocationFailed, "error", err)
		return unavailable("cannot revoke the token", "the revocation store is unavailable", err)
	}
	return nil
}
