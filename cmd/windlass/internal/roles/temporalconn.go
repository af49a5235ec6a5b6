package roles

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// temporalConn says how a role reaches an external Temporal: TLS (server
// verification, or mutual TLS with a client certificate) and an API key
// (Temporal Cloud). The names follow the temporal CLI's environment.
type temporalConn struct {
	TLS           bool
	TLSCert       string
	TLSKey        string
	TLSCA         string
	TLSServerName string
	// APIKeyFile holds the API key; it is read again when it changes, so
	// a mounted Secret can rotate.
	APIKeyFile string
	// apiKey comes from $TEMPORAL_API_KEY only: never a flag, never logged.
	apiKey string
}

func envBool(name string, def bool) bool {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def
	}
	return b
}

// envFirst returns the first of the variables that is set, or def.
func envFirst(def string, names ...string) string {
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			return v
		}
	}
	return def
}

func bindTemporalConn(fs *flag.FlagSet, t *temporalConn) {
	fs.BoolVar(&t.TLS, "temporal-tls", envBool("TEMPORAL_TLS", false), "connect to Temporal over TLS; implied by the other --temporal-tls-* flags and an API key (env TEMPORAL_TLS)")
	fs.StringVar(&t.TLSCert, "temporal-tls-cert", envFirst("", "WINDLASS_TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CERT"), "PEM client certificate for mutual TLS (env TEMPORAL_TLS_CERT)")
	fs.StringVar(&t.TLSKey, "temporal-tls-key", envFirst("", "WINDLASS_TEMPORAL_TLS_KEY", "TEMPORAL_TLS_KEY"), "PEM private key of --temporal-tls-cert (env TEMPORAL_TLS_KEY)")
	fs.StringVar(&t.TLSCA, "temporal-tls-ca", envFirst("", "WINDLASS_TEMPORAL_TLS_CA", "TEMPORAL_TLS_CA"), "PEM CA bundle that signed the Temporal frontend's certificate (env TEMPORAL_TLS_CA; default: the system roots)")
	fs.StringVar(&t.TLSServerName, "temporal-tls-server-name", envFirst("", "WINDLASS_TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_SERVER_NAME"), "server name to verify in the frontend's certificate (env TEMPORAL_TLS_SERVER_NAME)")
	fs.StringVar(&t.APIKeyFile, "temporal-api-key-file", envFirst("", "WINDLASS_TEMPORAL_API_KEY_FILE", "TEMPORAL_API_KEY_FILE"), "file holding a Temporal Cloud API key (env TEMPORAL_API_KEY_FILE; or the key itself in env TEMPORAL_API_KEY)")
	t.apiKey = envFirst("", "WINDLASS_TEMPORAL_API_KEY", "TEMPORAL_API_KEY")
}

func (t temporalConn) validate() error {
	var errs []error
	if (t.TLSCert == "") != (t.TLSKey == "") {
		errs = append(errs, errors.New("temporal-tls-cert and temporal-tls-key go together"))
	}
	if t.apiKey != "" && t.APIKeyFile != "" {
		errs = append(errs, errors.New("give the Temporal API key in TEMPORAL_API_KEY or in temporal-api-key-file, not both"))
	}
	if t.APIKeyFile != "" {
		if _, err := readAPIKey(t.APIKeyFile); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := t.tlsConfig(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// useTLS reports whether the connection is TLS.
func (t temporalConn) useTLS() bool {
	return t.TLS || t.TLSCert != "" || t.TLSCA != "" || t.TLSServerName != "" || t.apiKey != "" || t.APIKeyFile != ""
}

// tlsConfig is the connection's TLS configuration, nil for plaintext.
func (t temporalConn) tlsConfig() (*tls.Config, error) {
	if !t.useTLS() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.TLSServerName}
	if t.TLSCert != "" && t.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(t.TLSCert, t.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("temporal client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	if t.TLSCA != "" {
		pem, err := os.ReadFile(t.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("temporal-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal-tls-ca %s: no PEM certificate in it", t.TLSCA)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// credentials are the API key credentials, nil without a key.
func (t temporalConn) credentials() client.Credentials {
	switch {
	case t.apiKey != "":
		return client.NewAPIKeyStaticCredentials(t.apiKey)
	case t.APIKeyFile != "":
		f := &apiKeyFile{path: t.APIKeyFile}
		return client.NewAPIKeyDynamicCredentials(f.key)
	}
	return nil
}

// describe is the connection for the log, with no secret in it.
func (t temporalConn) describe() []any {
	auth := "none"
	switch {
	case t.TLSCert != "":
		auth = "mtls"
	case t.apiKey != "":
		auth = "api-key (env)"
	case t.APIKeyFile != "":
		auth = "api-key (file " + t.APIKeyFile + ")"
	}
	return []any{"tls", t.useTLS(), "auth", auth}
}

func readAPIKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("temporal-api-key-file: %w", err)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", fmt.Errorf("temporal-api-key-file %s is empty", path)
	}
	return k, nil
}

// apiKeyFile reads the key at most once every apiKeyReload, so that a
// rotated Secret is picked up without a read per request.
type apiKeyFile struct {
	path   string
	mu     sync.Mutex
	cached string
	at     time.Time
}

const apiKeyReload = time.Minute

func (f *apiKeyFile) key(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cached != "" && time.Since(f.at) < apiKeyReload {
		return f.cached, nil
	}
	k, err := readAPIKey(f.path)
	if err != nil {
		if f.cached != "" {
			return f.cached, nil // keep the last good key
		}
		return "", err
	}
	f.cached, f.at = k, time.Now()
	return k, nil
}
