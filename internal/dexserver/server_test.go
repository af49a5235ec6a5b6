package dexserver

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
)

// testHash is the bcrypt hash (cost 10, Dex's minimum) of "password".
func testHash(t *testing.T) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("password"), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestConfigValidate(t *testing.T) {
	hash := testHash(t)
	low, err := bcrypt.GenerateFromPassword([]byte("password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	mock := Connector{Type: "mockPassword", ID: "mock", Name: "Mock", Config: json.RawMessage(`{"username": "jane", "password": "secret"}`)}
	user := Password{Email: "jane@example.com", Hash: hash}
	t.Setenv("DEX_TEST_HASH", hash)
	for _, tt := range []struct {
		name string
		cfg  Config
		want string // a part of the error; "" for none
	}{
		{"connector", Config{Connectors: []Connector{mock}}, ""},
		{"static password", Config{StaticPasswords: []Password{user}}, ""},
		{"hash from the environment", Config{StaticPasswords: []Password{{Email: "jane@example.com", HashFromEnv: "DEX_TEST_HASH"}}}, ""},
		{"nothing", Config{}, "at least one connector or static password"},
		{"no type", Config{Connectors: []Connector{{ID: "x", Name: "X"}}}, "type, id and name are required"},
		{"unknown type", Config{Connectors: []Connector{{Type: "myspace", ID: "x", Name: "X"}}}, `unknown connector type "myspace"`},
		{"unknown field", Config{Connectors: []Connector{{Type: "github", ID: "gh", Name: "GitHub",
			Config: json.RawMessage(`{"clientID": "a", "clientSecrett": "b"}`)}}}, `unknown field "clientSecrett"`},
		{"config not an object", Config{Connectors: []Connector{{Type: "github", ID: "gh", Name: "GitHub", Config: json.RawMessage(`[1]`)}}}, "must be an object"},
		{"local id", Config{Connectors: []Connector{{Type: "mockPassword", ID: "local", Name: "L"}}}, "static passwords' connector"},
		{"duplicate id", Config{Connectors: []Connector{mock, mock}}, `duplicate id "mock"`},
		{"no email", Config{StaticPasswords: []Password{{Hash: hash}}}, "email is required"},
		{"duplicate email", Config{StaticPasswords: []Password{user, user}}, "duplicate email"},
		{"not a hash", Config{StaticPasswords: []Password{{Email: "jane@example.com", Hash: "password"}}}, "bcrypt"},
		{"cost too low", Config{StaticPasswords: []Password{{Email: "jane@example.com", Hash: string(low)}}}, "bcrypt of cost 10 to 16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestConnectorEnvExpansion(t *testing.T) {
	t.Setenv("DEX_TEST_SECRET", "s3cr3t")
	c := Connector{Type: "github", ID: "gh", Name: "GitHub",
		Config: json.RawMessage(`{"clientID": "id", "clientSecret": "$DEX_TEST_SECRET", "orgs": [{"name": "${DEX_TEST_SECRET}-org"}]}`)}
	b, err := c.expanded()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"clientID": "id", "clientSecret": "s3cr3t", "orgs": []any{map[string]any{"name": "s3cr3t-org"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("expanded (-want +got):\n%s", d)
	}
}

// testOptions are the options of a Dex at issuer.
func testOptions(issuer string) Options {
	return Options{
		Issuer: issuer, RedirectURI: "http://windlass.test/api/v1/sso/callback",
		ClientSecret: "client-secret-for-tests", Logger: slog.New(slog.DiscardHandler),
	}
}

func TestNewRefusesOptions(t *testing.T) {
	cfg := Config{StaticPasswords: []Password{{Email: "jane@example.com", Hash: testHash(t)}}}
	for _, tt := range []struct {
		name string
		opts func(*Options)
		want string
	}{
		{"issuer without a path", func(o *Options) { o.Issuer = "http://windlass.test" }, "must be an http(s) URL with a path"},
		{"relative issuer", func(o *Options) { o.Issuer = "/api/dex" }, "must be an http(s) URL with a path"},
		{"issuer with a query", func(o *Options) { o.Issuer = "http://windlass.test/api/dex?x=1" }, "must be an http(s) URL with a path"},
		{"relative redirect", func(o *Options) { o.RedirectURI = "/api/v1/sso/callback" }, "redirect URI"},
		{"short secret", func(o *Options) { o.ClientSecret = "short" }, "client secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions("http://windlass.test" + Path)
			tt.opts(&o)
			_, err := New(t.Context(), cfg, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestServerDiscovery starts Dex and reads its discovery document and
// keys through Client, in process: the issuer's host does not exist.
func TestServerDiscovery(t *testing.T) {
	issuer := "https://windlass.invalid" + Path
	s, err := New(t.Context(), Config{
		Connectors:      []Connector{{Type: "mockPassword", ID: "mock", Name: "Mock", Config: json.RawMessage(`{"username": "jane", "password": "secret"}`)}},
		StaticPasswords: []Password{{Email: "jane@example.com", Hash: testHash(t), Groups: []string{"windlass-admins"}}},
	}, testOptions(issuer))
	if err != nil {
		t.Fatal(err)
	}
	if s.PathPrefix() != Path || s.Issuer() != issuer {
		t.Errorf("PathPrefix %q, Issuer %q", s.PathPrefix(), s.Issuer())
	}
	get := func(u string) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v %s", u, res.StatusCode, err, b)
		}
		return b
	}
	var disc discovery
	if err := json.Unmarshal(get(issuer+"/.well-known/openid-configuration"), &disc); err != nil {
		t.Fatal(err)
	}
	want := discovery{issuer, issuer + "/keys", issuer + "/device/code", []string{"S256"}, []string{"RS256"}}
	if d := cmp.Diff(want, disc); d != "" {
		t.Errorf("discovery (-want +got):\n%s", d)
	}
	var keys struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(get(disc.JWKS), &keys); err != nil || len(keys.Keys) == 0 {
		t.Errorf("keys: %v %d", err, len(keys.Keys))
	}
}

// TestLocalTransport: only the issuer's URLs are served in process.
func TestLocalTransport(t *testing.T) {
	issuer, _ := url.Parse("https://windlass.test/api/dex")
	var served, forwarded []string
	tr := &localTransport{
		issuer: issuer,
		h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served = append(served, r.Method+" "+r.RequestURI)
			w.Header().Set("X-Dex", "1")
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "body")
		}),
		next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			forwarded = append(forwarded, r.URL.String())
			return nil, errors.New("no network in this test")
		}),
	}
	c := &http.Client{Transport: tr}
	for _, u := range []string{
		"https://windlass.test/api/dex/.well-known/openid-configuration?x=1",
		"https://windlass.test/api/dex",
		"https://windlass.test/api/dexterity",
		"http://windlass.test/api/dex/keys",
		"https://other.test/api/dex/keys",
		"https://windlass.test/api/v1/applications",
	} {
		res, err := c.Get(u)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusTeapot || string(b) != "body" || res.Header.Get("X-Dex") != "1" {
				t.Errorf("%s: %d %q %v", u, res.StatusCode, b, res.Header)
			}
		}
	}
	if d := cmp.Diff([]string{"GET /api/dex/.well-known/openid-configuration?x=1", "GET /api/dex"}, served); d != "" {
		t.Errorf("served in process (-want +got):\n%s", d)
	}
	if len(forwarded) != 4 {
		t.Errorf("forwarded %v, want the other 4", forwarded)
	}
}

// discovery is what the tests read of the discovery document.
type discovery struct {
	Issuer  string   `json:"issuer"`
	JWKS    string   `json:"jwks_uri"`
	Device  string   `json:"device_authorization_endpoint"`
	PKCE    []string `json:"code_challenge_methods_supported"`
	Signing []string `json:"id_token_signing_alg_values_supported"`
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
