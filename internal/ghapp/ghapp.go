package ghapp

import (
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/windlass-cd/windlass/internal/failure"
)

// DefaultAPI is github.com's API base.
const DefaultAPI = "https://api.github.com"

// enterprisePath is where GitHub Enterprise Server serves its REST API.
const enterprisePath = "/api/v3"

// Errors that a new token request cannot fix; their types travel to the
// workflow. A server that does not answer, or answers 5xx, is retryable.
var (
	// ErrRefused: the API refused the app's JWT (401, 403): the key is
	// revoked, expired or not the app's, or the app ID is wrong.
	ErrRefused = failure.Permanent("GitHubAppRefused", "GitHub App credential refused")
	// ErrInstallationNotFound: the API has no such installation of the
	// app (404).
	ErrInstallationNotFound = failure.Permanent("GitHubAppInstallationNotFound", "GitHub App installation not found")
	// ErrInvalidKey: the private key is not an RSA key in PEM.
	ErrInvalidKey = failure.Permanent("GitHubAppInvalidKey", "GitHub App private key is not an RSA key in PEM")
)

// App is a GitHub App credential. Its String and LogValue leave the
// key out.
type App struct {
	// EnterpriseBaseURL is GitHub Enterprise Server's API base
	// (https://ghe.example.com/api/v3); "" is github.com.
	EnterpriseBaseURL string
	AppID             int64
	InstallationID    int64
	// PrivateKey is the app's RSA private key in PEM (PKCS #1 or #8).
	PrivateKey string
}

// String names the app and installation, never the key.
func (a App) String() string {
	return "GitHub App " + strconv.FormatInt(a.AppID, 10) + " installation " + strconv.FormatInt(a.InstallationID, 10)
}

// LogValue keeps the key out of logs.
func (a App) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("app", a.AppID), slog.Int64("installation", a.InstallationID),
		slog.String("api", a.EnterpriseBaseURL))
}

// API is the app's API base: DefaultAPI, or the enterprise base URL,
// with /api/v3 appended when it names only a host other than
// api.github.com (Argo CD's field takes the full https://host/api/v3).
func API(enterpriseBaseURL string) (string, error) {
	if enterpriseBaseURL == "" {
		return DefaultAPI, nil
	}
	u, err := url.Parse(enterpriseBaseURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("the enterprise base URL must be an http(s):// URL such as https://ghe.example.com/api/v3")
	}
	base := strings.TrimSuffix(u.String(), "/")
	if strings.Trim(u.Path, "/") == "" && base != DefaultAPI {
		base += enterprisePath
	}
	return base, nil
}

// Validate checks the IDs, the key and the base URL; each message
// names its field as Argo CD's repository secrets spell it, and none
// echoes the key.
func (a App) Validate() (field string, err error) {
	switch {
	case a.AppID <= 0:
		return "githubAppID", errors.New("a GitHub App needs its app ID, a positive number")
	case a.InstallationID <= 0:
		return "githubAppInstallationID", errors.New("a GitHub App needs its installation ID, a positive number")
	case a.PrivateKey == "":
		return "githubAppPrivateKey", errors.New("a GitHub App needs its private key (PEM)")
	}
	if _, err := ParseKey(a.PrivateKey); err != nil {
		return "githubAppPrivateKey", err
	}
	if _, err := API(a.EnterpriseBaseURL); err != nil {
		return "githubAppEnterpriseBaseUrl", err
	}
	return "", nil
}

// ParseKey reads an RSA private key from PEM, PKCS #1 (what GitHub
// hands out) or PKCS #8. Its errors never hold key material.
func ParseKey(s string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(s)))
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrInvalidKey)
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if block.Type == "EC PRIVATE KEY" {
		return nil, fmt.Errorf("%w: an EC key; GitHub Apps sign with RSA", ErrInvalidKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: the PEM block is neither PKCS #1 nor PKCS #8", ErrInvalidKey)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: a %T, not RSA", ErrInvalidKey, k)
	}
	return rk, nil
}

// JWT lifetime: GitHub accepts at most 10 minutes between iat and exp,
// and advises an iat in the past for clocks that drift.
const (
	jwtBackdate = time.Minute
	jwtLifetime = 9 * time.Minute
)

// Claims are the app JWT's claims at now: the app ID as issuer, issued
// a minute ago, expiring in nine minutes.
func Claims(appID int64, now time.Time) jwt.RegisteredClaims {
	return jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(appID, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-jwtBackdate)),
		ExpiresAt: jwt.NewNumericDate(now.Add(jwtLifetime)),
	}
}

// SignJWT is the app's JWT at now, signed RS256 with key.
func SignJWT(key *rsa.PrivateKey, appID int64, now time.Time) (string, error) {
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, Claims(appID, now)).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign the app JWT: %w", err)
	}
	return s, nil
}

// keyDigest identifies a key in the cache without holding it.
func keyDigest(pem string) string {
	h := sha256.Sum256([]byte(strings.TrimSpace(pem)))
	return hex.EncodeToString(h[:8])
}
