package auth

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// AdminAccount is the built-in account. It always exists; an AccountConfig
// of this name may disable it or change its capabilities.
const AdminAccount = "admin"

// Account capabilities.
const (
	// CapabilityLogin lets an account log in with its password.
	CapabilityLogin = "login"
	// CapabilityAPIKey lets API tokens be minted for an account.
	CapabilityAPIKey = "apiKey"
)

// SecureCookieMode says when the session cookies carry the Secure attribute.
type SecureCookieMode string

// Secure cookie modes.
const (
	// SecureCookieAuto sets Secure when the request came over TLS (the
	// default). Behind a proxy that terminates TLS, use SecureCookieAlways.
	SecureCookieAuto SecureCookieMode = "auto"
	// SecureCookieAlways always sets Secure.
	SecureCookieAlways SecureCookieMode = "always"
	// SecureCookieNever never sets Secure (plain-HTTP development only).
	SecureCookieNever SecureCookieMode = "never"
)

// Defaults of Config.
const (
	DefaultSessionLifetime         = 24 * time.Hour
	DefaultAPITokenLifetime        = 90 * 24 * time.Hour
	DefaultAPITokenMaxLifetime     = 365 * 24 * time.Hour
	DefaultMinPasswordLength       = 12
	DefaultRevocationTimeout       = 2 * time.Second
	DefaultLoginMaxFailuresPerUser = 5
	DefaultLoginMaxFailuresPerIP   = 20
	DefaultLoginFailureWindow      = 5 * time.Minute
	DefaultLoginLimiterEntries     = 10000
)

// maxPasswordBytes is bcrypt's limit: it ignores what lies beyond.
const maxPasswordBytes = 72

// Config configures the Service. A zero field takes its default.
type Config struct {
	// Accounts are the local accounts besides admin (and admin's
	// settings, under the name "admin").
	Accounts []AccountConfig
	// SessionLifetime is how long a login session lasts.
	SessionLifetime time.Duration
	// APITokenDefaultLifetime is the lifetime of an API token minted
	// without one.
	APITokenDefaultLifetime time.Duration
	// APITokenMaxLifetime caps the lifetime of an API token.
	APITokenMaxLifetime time.Duration
	// AllowNonExpiringAPITokens allows TokenOptions.NoExpiry. Signing keys
	// are then kept for ever after a rotation.
	AllowNonExpiringAPITokens bool
	// MinPasswordLength is the shortest password SetPassword accepts.
	MinPasswordLength int
	// BcryptCost is the bcrypt cost of new password hashes.
	BcryptCost int
	// SecureCookie says when cookies carry the Secure attribute.
	SecureCookie SecureCookieMode
	// RevocationTimeout bounds each call to the revocation store.
	RevocationTimeout time.Duration
	// LoginRateLimit limits failed logins.
	LoginRateLimit RateLimitConfig
}

// AccountConfig is a local account.
type AccountConfig struct {
	// Name is a DNS-1123 label ("ci-bot").
	Name string
	// Enabled accounts can log in and use their tokens.
	Enabled bool
	// Capabilities are CapabilityLogin and/or CapabilityAPIKey.
	Capabilities []string
}

// RateLimitConfig limits failed logins: after MaxFailuresPerUser failures
// for one user name, or MaxFailuresPerIP from one client address, within
// Window, further attempts are refused (429) until the oldest failure
// leaves the window.
type RateLimitConfig struct {
	MaxFailuresPerUser int
	MaxFailuresPerIP   int
	Window             time.Duration
	// MaxEntries bounds the number of user names and addresses tracked;
	// the least recently failed are forgotten first.
	MaxEntries int
}

// withDefaults returns c with each zero field set to its default.
func (c Config) withDefaults() Config {
	setDefault(&c.SessionLifetime, DefaultSessionLifetime)
	setDefault(&c.APITokenDefaultLifetime, DefaultAPITokenLifetime)
	setDefault(&c.APITokenMaxLifetime, DefaultAPITokenMaxLifetime)
	setDefault(&c.MinPasswordLength, DefaultMinPasswordLength)
	setDefault(&c.BcryptCost, bcrypt.DefaultCost)
	setDefault(&c.SecureCookie, SecureCookieAuto)
	setDefault(&c.RevocationTimeout, DefaultRevocationTimeout)
	setDefault(&c.LoginRateLimit.MaxFailuresPerUser, DefaultLoginMaxFailuresPerUser)
	setDefault(&c.LoginRateLimit.MaxFailuresPerIP, DefaultLoginMaxFailuresPerIP)
	setDefault(&c.LoginRateLimit.Window, DefaultLoginFailureWindow)
	setDefault(&c.LoginRateLimit.MaxEntries, DefaultLoginLimiterEntries)
	return c
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// dnsLabel is a DNS-1123 label: account names, API token IDs and the parts
// of a project role, so that they can name a secret.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate reports the first invalid setting (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.SessionLifetime > 0, "session lifetime %s must be positive", c.SessionLifetime)
	check(c.APITokenMaxLifetime > 0, "api token max lifetime %s must be positive", c.APITokenMaxLifetime)
	check(c.APITokenDefaultLifetime > 0 && c.APITokenDefaultLifetime <= c.APITokenMaxLifetime,
		"api token default lifetime %s must be positive and at most the max lifetime %s", c.APITokenDefaultLifetime, c.APITokenMaxLifetime)
	check(c.MinPasswordLength >= 8 && c.MinPasswordLength <= maxPasswordBytes,
		"min password length %d must be between 8 and %d", c.MinPasswordLength, maxPasswordBytes)
	check(c.BcryptCost >= bcrypt.MinCost && c.BcryptCost <= bcrypt.MaxCost,
		"bcrypt cost %d must be between %d and %d", c.BcryptCost, bcrypt.MinCost, bcrypt.MaxCost)
	check(slices.Contains([]SecureCookieMode{SecureCookieAuto, SecureCookieAlways, SecureCookieNever}, c.SecureCookie),
		"secure cookie mode %q must be auto, always or never", c.SecureCookie)
	check(c.RevocationTimeout > 0, "revocation timeout %s must be positive", c.RevocationTimeout)
	rl := c.LoginRateLimit
	check(rl.MaxFailuresPerUser > 0 && rl.MaxFailuresPerIP > 0 && rl.Window > 0 && rl.MaxEntries > 0,
		"login rate limit values must be positive")
	seen := map[string]bool{}
	for i, a := range c.Accounts {
		check(dnsLabel.MatchString(a.Name), "accounts[%d]: name %q must be a DNS-1123 label", i, a.Name)
		check(!seen[a.Name], "accounts[%d]: duplicate name %q", i, a.Name)
		seen[a.Name] = true
		for _, cp := range a.Capabilities {
			check(cp == CapabilityLogin || cp == CapabilityAPIKey,
				"accounts[%d]: capability %q must be %s or %s", i, cp, CapabilityLogin, CapabilityAPIKey)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("auth config: %w", err)
	}
	return nil
}
