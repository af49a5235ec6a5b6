package auth

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/internal/secretstore"
)

// accountSecretPrefix names an account's secret: windlass-account-<name>,
// holding passwordHashKey and passwordChangedAtKey.
const (
	accountSecretPrefix  = "windlass-account-"
	passwordHashKey      = "passwordHash"
	passwordChangedAtKey = "passwordChangedAt"
)

// maxUserNameBytes bounds the user names the login rate limiter tracks.
const maxUserNameBytes = 253

// account is a local account.
type account struct {
	enabled      bool
	capabilities []string
}

func (a account) can(capability string) bool { return slices.Contains(a.capabilities, capability) }

// accountsFrom returns admin (enabled, login) and the configured accounts.
func accountsFrom(cfg []AccountConfig) map[string]account {
	m := map[string]account{AdminAccount: {enabled: true, capabilities: []string{CapabilityLogin}}}
	for _, a := range cfg {
		m[a.Name] = account{enabled: a.Enabled, capabilities: slices.Clone(a.Capabilities)}
	}
	return m
}

// passwordHash returns the stored hash of name's password, or nil when
// none is set.
func (s *Service) passwordHash(ctx context.Context, name string) ([]byte, error) {
	data, err := s.secrets.Get(ctx, accountSecretPrefix+name)
	if errors.Is(err, secretstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read password hash of %s: %w", name, err)
	}
	if len(data[passwordHashKey]) == 0 {
		return nil, nil
	}
	return data[passwordHashKey], nil
}

func (s *Service) storePasswordHash(ctx context.Context, name string, hash []byte) error {
	err := s.secrets.Put(ctx, accountSecretPrefix+name, map[string][]byte{
		passwordHashKey:      hash,
		passwordChangedAtKey: []byte(s.now().UTC().Format(time.RFC3339)),
	})
	if err != nil {
		return fmt.Errorf("store password hash of %s: %w", name, err)
	}
	return nil
}

// limitKeys are the rate limiter's keys for a user name and a client
// address ("" for none).
func (s *Service) limitKeys(name, ip string) []limit {
	if len(name) > maxUserNameBytes {
		name = name[:maxUserNameBytes]
	}
	keys := []limit{{key: "user:" + name, max: s.cfg.LoginRateLimit.MaxFailuresPerUser}}
	if ip != "" {
		keys = append(keys, limit{key: "ip:" + ip, max: s.cfg.LoginRateLimit.MaxFailuresPerIP})
	}
	return keys
}

// authenticate checks name's password, rate limited per user name and per
// client address ip ("" for none). A wrong password and an unknown user (or
// one without a password) take the same time and give the same error. On
// ErrRateLimited, wait is the time to wait. It does not look at whether the
// account is enabled: see checkSubject.
func (s *Service) authenticate(ctx context.Context, name, password, ip string) (wait time.Duration, err error) {
	now := s.now()
	keys := s.limitKeys(name, ip)
	if wait := s.limiter.wait(now, keys...); wait > 0 {
		s.log.Warn(msgLoginRateLimited, "ip", ip, "retry_after", wait)
		return wait, fail(ErrRateLimited, "too many failed logins: retry after "+retryAfter(wait)+" seconds")
	}
	_, known := s.accounts[name]
	hash := s.dummyHash
	if known {
		stored, err := s.passwordHash(ctx, name)
		if err != nil {
			return 0, unavailable("cannot check the password", "the secret store is unavailable", err)
		}
		if stored == nil {
			known = false // no password set: nobody can log in
		} else {
			hash = stored
		}
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || !known {
		s.limiter.fail(now, keys...)
		// An unknown name may be a mistyped password: log only known names.
		if known {
			s.log.Info(msgLoginFailed, "user", name, "ip", ip)
		} else {
			s.log.Info(msgLoginFailed, "user_known", false, "ip", ip)
		}
		return 0, fail(ErrInvalidCredentials, "invalid user name or password")
	}
	s.limiter.reset(keys[0].key)
	return 0, nil
}

// retryAfter is wait in whole seconds, rounded up (for Retry-After).
func retryAfter(wait time.Duration) string {
	return strconv.Itoa(int((wait + time.Second - 1) / time.Second))
}

// SetPassword sets account name's password to newPassword. current is the
// caller's own password: the caller is the principal in ctx (see
// ContextWithPrincipal), or account name itself when ctx has none. Admin
// may set any account's password; other accounts only their own. The new
// password must be MinPasswordLength to 72 bytes long. Sessions issued
// before stay valid until they expire or are logged out.
func (s *Service) SetPassword(ctx context.Context, name, current, newPassword string) error {
	if _, ok := s.accounts[name]; !ok {
		return fail(ErrNotFound, "account not found")
	}
	caller := name
	if p, ok := PrincipalFromContext(ctx); ok && p.Name != name {
		if p.Name != AdminAccount {
			return fail(ErrForbidden, "only admin may set another account's password")
		}
		caller = AdminAccount
	}
	if _, err := s.authenticate(ctx, caller, current, ""); err != nil {
		return err
	}
	if n := len(newPassword); n < s.cfg.MinPasswordLength || n > maxPasswordBytes {
		return fail(ErrInvalidArgument, fmt.Sprintf("the password must be %d to %d bytes long", s.cfg.MinPasswordLength, maxPasswordBytes))
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(newPassword), s.cfg.BcryptCost)
	if err != nil {
		return fmt.Errorf("hash password: %w", err)
	}
	if err := s.storePasswordHash(ctx, name, hash); err != nil {
		return err
	}
	s.log.Info(msgPasswordChanged, "user", name, "by", caller)
	return nil
}

// checkSubject reports whether tokens of kind may be used for subject now:
// an enabled account with the capability (login for sessions, apiKey for
// API tokens), or a project role (API tokens only).
func (s *Service) checkSubject(subject, kind string) error {
	if isProjectRole(subject) {
		if kind != KindAPIToken {
			return fail(ErrInvalidArgument, "only API tokens may be issued for a project role")
		}
		return nil
	}
	acct, ok := s.accounts[subject]
	if !ok {
		return fail(ErrNotFound, "account not found")
	}
	if !acct.enabled {
		return fail(ErrAccountDisabled, "account "+subject+" is disabled")
	}
	need := CapabilityLogin
	if kind == KindAPIToken {
		need = CapabilityAPIKey
	}
	if !acct.can(need) {
		return fail(ErrAccountDisabled, "account "+subject+" lacks the "+need+" capability")
	}
	return nil
}

// isProjectRole reports whether subject is proj:<project>:<role>.
func isProjectRole(subject string) bool {
	parts := strings.Split(subject, ":")
	return len(parts) == 3 && parts[0] == "proj" && dnsLabel.MatchString(parts[1]) && dnsLabel.MatchString(parts[2])
}

// Accounts lists the local accounts, admin included, sorted by name.
func (s *Service) Accounts() []AccountConfig {
	out := make([]AccountConfig, 0, len(s.accounts))
	for _, name := range slices.Sorted(maps.Keys(s.accounts)) {
		a := s.accounts[name]
		out = append(out, AccountConfig{Name: name, Enabled: a.enabled, Capabilities: slices.Clone(a.capabilities)})
	}
	return out
}
