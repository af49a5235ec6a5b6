package roles

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/dexserver"
)

func TestSSOExternalURL(t *testing.T) {
	for _, tt := range []struct {
		ext, addr, want string
		fails           bool
	}{
		{addr: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{addr: ":8080", want: "http://127.0.0.1:8080"},
		{addr: "0.0.0.0:9090", want: "http://127.0.0.1:9090"},
		{addr: "[::]:9090", want: "http://127.0.0.1:9090"},
		{addr: "windlass.internal:80", want: "http://windlass.internal:80"},
		{ext: "https://windlass.example.com/", addr: ":8080", want: "https://windlass.example.com"},
		{ext: "ftp://windlass.example.com", fails: true},
		{ext: "windlass.example.com", fails: true},
		{ext: "https://windlass.example.com/?x=1", fails: true},
		{addr: "no-port", fails: true},
	} {
		got, err := ssoSettings{ExternalURL: tt.ext, apiAddr: tt.addr}.externalURL()
		if (err != nil) != tt.fails || got != tt.want {
			t.Errorf("externalURL(%q, %q) = %q, %v; want %q (fails: %v)", tt.ext, tt.addr, got, err, tt.want, tt.fails)
		}
	}
}

// noSessions is a Sessions that is never called here.
type noSessions struct{}

func (noSessions) IssueSession(*echo.Context, string, []string) (string, time.Time, error) {
	panic("not called")
}

func TestBuildSSO(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("password"), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	dex := &dexserver.Config{StaticPasswords: []dexserver.Password{{Email: "jane@example.com", Hash: string(hash)}}}
	log := slog.New(slog.DiscardHandler)
	t.Setenv(envOIDCClientSecret, "external-secret")
	for _, tt := range []struct {
		name string
		f    *ssoFile
		s    ssoSettings
		// want: "off", "dex" or "external"; else a part of the error.
		want string
	}{
		{"nothing", nil, ssoSettings{}, "off"},
		{"empty section", &ssoFile{Name: "x"}, ssoSettings{}, "off"},
		{"in-process dex", &ssoFile{Dex: dex}, ssoSettings{apiAddr: "127.0.0.1:8080"}, "dex"},
		{"issuer flag", nil, ssoSettings{OIDCIssuer: "https://dex.example.com", apiAddr: ":8080"}, "external"},
		{"issuer in the file", &ssoFile{OIDC: &oidcFile{Issuer: "https://dex.example.com"}}, ssoSettings{apiAddr: ":8080"}, "external"},
		{"both", &ssoFile{Dex: dex}, ssoSettings{OIDCIssuer: "https://dex.example.com", apiAddr: ":8080"}, "not both"},
		{"bad dex config", &ssoFile{Dex: &dexserver.Config{}}, ssoSettings{apiAddr: ":8080"}, "at least one connector"},
		{"bad issuer", nil, ssoSettings{OIDCIssuer: "dex.example.com", apiAddr: ":8080"}, "must be an http(s) URL"},
		{"bad external URL", &ssoFile{Dex: dex}, ssoSettings{ExternalURL: "windlass", apiAddr: ":8080"}, "external-url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, d, err := buildSSO(t.Context(), log, tt.f, tt.s, noSessions{}, nil)
			got := "external"
			switch {
			case err != nil:
				got = err.Error()
			case h == nil && d == nil:
				got = "off"
			case d != nil:
				got = "dex"
				if d.PathPrefix() != dexserver.Path {
					t.Errorf("Dex at %q", d.PathPrefix())
				}
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("buildSSO: %s, want %s", got, tt.want)
			}
		})
	}
}

// TestAuthFileSSO reads the example auth configs with an sso section
// (README shows them): the file and Dex's connector configs are valid.
func TestAuthFileSSO(t *testing.T) {
	for _, name := range []string{"auth-sso-dev.yaml", "auth-sso-connectors.yaml"} {
		t.Run(name, func(t *testing.T) {
			f, err := loadAuthFile(filepath.Join("..", "..", "..", "..", "examples", name))
			if err != nil {
				t.Fatal(err)
			}
			if f.SSO == nil || f.SSO.Dex == nil {
				t.Fatalf("no sso.dex section: %+v", f.SSO)
			}
			if err := f.SSO.Dex.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if _, err := rbac.New(rbac.Config{PolicyCSV: f.Policy, DefaultRole: f.PolicyDefault}, nil); err != nil {
				t.Errorf("policy: %v", err)
			}
		})
	}
}
