package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

// Log messages.
const (
	msgLoginRateLimited       = "login rate limited"
	msgLoginFailed            = "login failed"
	msgPasswordChanged        = "password changed"
	msgTokenMinted            = "api token minted"
	msgTokenDeleted           = "api token deleted"
	msgTokenCheckFailed       = "api token check failed"
	msgLoginRefused           = "login refused"
	msgLoginSucceeded         = "login succeeded"
	msgLogout                 = "logout"
	msgCSRFFailed             = "csrf check failed"
	msgKeyCreated             = "signing key created"
	msgAdminPasswordGenerated = "initial admin password generated"
	msgKeyRotated             = "signing key rotated"
	msgRevocationCheckFailed  = "revocation check failed"
	msgRevocationFailed       = "revocation failed"
)

// Service authenticates users and tokens. Create it with New, then call
// Bootstrap once at start.
type Service struct {
	cfg         Config
	secrets     secretstore.Store
	revocations Revocations
	log         *slog.Logger

	keys      *keyring
	accounts  map[string]account
	limiter   *failureLimiter
	dummyHash []byte // compared against for unknown users
	parser    *jwt.Parser
	now       func() time.Time
}

// New builds the Service. It checks cfg (see Config.Validate); secrets keeps
// the keys, password hashes and API token records; revocations records
// logged-out tokens.
func New(cfg Config, secrets secretstore.Store, revocations Revocations, logger *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if secrets == nil || revocations == nil {
		return nil, errors.New("auth: a secret store and a revocation store are required")
	}
	if logger == nil {
		logger = slog.Default()
	}
	cfg = cfg.withDefaults()
	dummy, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), cfg.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("auth: dummy password hash: %w", err)
	}
	s := &Service{
		cfg:         cfg,
		secrets:     secrets,
		revocations: revocations,
		log:         logger,
		keys:        &keyring{store: secrets},
		accounts:    accountsFrom(cfg.Accounts),
		limiter:     newFailureLimiter(cfg.LoginRateLimit.Window, cfg.LoginRateLimit.MaxEntries),
		dummyHash:   dummy,
		now:         time.Now,
	}
	s.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(Issuer),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(func() time.Time { return s.now() }),
	)
	return s, nil
}

// Bootstrap creates what a first start needs: a signing key, and the admin
// password when none is stored. It returns that password, which is stored
// only as a bcrypt hash, so that the caller can show it once; it returns ""
// when the admin password was already set. Bootstrap is idempotent.
//
// The secret store has no compare-and-swap: replicas starting at once may
// both write; each reads back what was stored and uses that, and only the
// replica whose password was stored returns it.
func (s *Service) Bootstrap(ctx context.Context) (initialAdminPassword string, err error) {
	created, err := s.keys.ensure(ctx, s.now())
	if err != nil {
		return "", fmt.Errorf("auth bootstrap: %w", err)
	}
	if created {
		s.log.Info(msgKeyCreated)
	}
	hash, err := s.passwordHash(ctx, AdminAccount)
	if err != nil || hash != nil {
		return "", err
	}
	password := rand.Text() // 26 characters, 130 bits
	hash, err = bcrypt.GenerateFromPassword([]byte(password), s.cfg.BcryptCost)
	if err != nil {
		return "", fmt.Errorf("auth bootstrap: hash admin password: %w", err)
	}
	if err := s.storePasswordHash(ctx, AdminAccount, hash); err != nil {
		return "", fmt.Errorf("auth bootstrap: %w", err)
	}
	stored, err := s.passwordHash(ctx, AdminAccount)
	if err != nil {
		return "", fmt.Errorf("auth bootstrap: %w", err)
	}
	if string(stored) != string(hash) {
		return "", nil // another replica's password won
	}
	s.log.Info(msgAdminPasswordGenerated)
	return password, nil
}

// RotateKey makes a new signing key current. Older keys still verify the
// tokens they signed for the longest token lifetime after they are retired
// (for ever when AllowNonExpiringAPITokens is set), then are dropped.
func (s *Service) RotateKey(ctx context.Context) error {
	keep := max(s.cfg.SessionLifetime, s.cfg.APITokenMaxLifetime) + leeway
	if s.cfg.AllowNonExpiringAPITokens {
		keep = -1
	}
	key, err := s.keys.rotate(ctx, s.now(), keep)
	if err != nil {
		return fmt.Errorf("rotate signing key: %w", err)
	}
	s.log.Info(msgKeyRotated, "kid", key.ID)
	return nil
}
