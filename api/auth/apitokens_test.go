package auth

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAPITokens(t *testing.T) {
	en := newEnv(t)
	ctx := t.Context()
	now := en.clock.Now().UTC().Truncate(time.Second)
	ciTok, ciInfo, err := en.s.MintToken(ctx, "ci", TokenOptions{ID: "deploy", Description: "deploys from CI"})
	if err != nil {
		t.Fatal(err)
	}
	projTok, projInfo, err := en.s.MintToken(ctx, "proj:shop:ci", TokenOptions{ExpiresIn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	want := TokenInfo{ID: "deploy", Subject: "ci", Description: "deploys from CI", IssuedAt: now, ExpiresAt: now.Add(DefaultAPITokenLifetime)}
	if d := cmp.Diff(want, ciInfo); d != "" {
		t.Errorf("minted (-want +got):\n%s", d)
	}

	// The record holds the hash, not the token.
	data, err := en.store.Get(ctx, "windlass-apitoken-deploy")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if strings.Contains(string(v), ciTok) {
			t.Errorf("the record's %s holds the token", k)
		}
	}
	if got := string(data[tokenHashKey]); got != tokenHash(ciTok) {
		t.Errorf("stored hash = %s, want the token's SHA-256", got)
	}

	all, err := en.s.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sortByID := cmpopts.SortSlices(func(a, b TokenInfo) bool { return a.ID < b.ID })
	if d := cmp.Diff([]TokenInfo{ciInfo, projInfo}, all, sortByID); d != "" {
		t.Errorf("ListTokens(\"\") (-want +got):\n%s", d)
	}
	mine, _ := en.s.ListTokens(ctx, "ci")
	if d := cmp.Diff([]TokenInfo{ciInfo}, mine); d != "" {
		t.Errorf("ListTokens(ci) (-want +got):\n%s", d)
	}

	var got []string
	use := func(step, tok string) {
		rec := en.do(request{method: http.MethodGet, path: "/api/v1/whoami", bearer: tok})
		said := rec.Body.String()
		if rec.Code != http.StatusOK {
			said = message(rec)
		}
		got = append(got, step+": "+http.StatusText(rec.Code)+" "+said)
	}
	use("ci", ciTok)
	use("project role", projTok)
	if err := en.s.DeleteToken(ctx, "deploy"); err != nil {
		t.Fatal(err)
	}
	use("ci after delete", ciTok)
	if err := en.s.DeleteToken(ctx, "deploy"); statusCode(err) != http.StatusNotFound {
		t.Errorf("second delete: %v, want 404", err)
	}
	en.clock.Advance(2 * time.Hour)
	use("project role expired", projTok)
	wantUses := []string{
		"ci: OK ci",
		"project role: OK proj:shop:ci",
		"ci after delete: Unauthorized API token deleted",
		"project role expired: Unauthorized token expired",
	}
	if d := cmp.Diff(wantUses, got); d != "" {
		t.Errorf("uses (-want +got):\n%s", d)
	}
}

func TestAPITokenLogout(t *testing.T) {
	en := newEnv(t)
	tok, info, err := en.s.MintToken(t.Context(), "carol", TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec := en.do(request{method: http.MethodDelete, path: "/api/v1/session", bearer: tok}); rec.Code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", rec.Code, rec.Body)
	}
	if _, err := en.store.Get(t.Context(), apiTokenSecretPrefix+info.ID); err == nil {
		t.Error("the record is still there")
	}
	if rec := en.do(request{method: http.MethodGet, path: "/api/v1/whoami", bearer: tok}); rec.Code != http.StatusUnauthorized {
		t.Errorf("use after logout: %d", rec.Code)
	}
}

func TestMintTokenRefused(t *testing.T) {
	en := newEnv(t)
	if _, _, err := en.s.MintToken(t.Context(), "ci", TokenOptions{ID: "taken"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		subject string
		opts    TokenOptions
		want    int
	}{
		{"account without apiKey", "alice", TokenOptions{}, http.StatusForbidden},
		{"disabled account", "bob", TokenOptions{}, http.StatusForbidden},
		{"unknown account", "mallory", TokenOptions{}, http.StatusNotFound},
		{"malformed project role", "proj:shop", TokenOptions{}, http.StatusNotFound},
		{"over the max lifetime", "ci", TokenOptions{ExpiresIn: DefaultAPITokenMaxLifetime + time.Hour}, http.StatusBadRequest},
		{"negative lifetime", "ci", TokenOptions{ExpiresIn: -time.Hour}, http.StatusBadRequest},
		{"no expiry", "ci", TokenOptions{NoExpiry: true}, http.StatusBadRequest},
		{"bad ID", "ci", TokenOptions{ID: "Not_A_Label"}, http.StatusBadRequest},
		{"ID taken", "ci", TokenOptions{ID: "taken"}, http.StatusConflict},
		{"long description", "ci", TokenOptions{Description: strings.Repeat("d", 257)}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := en.s.MintToken(t.Context(), tt.subject, tt.opts)
			if d := cmp.Diff(tt.want, statusCode(err)); d != "" {
				t.Errorf("status (-want +got): %s (%v)", d, err)
			}
		})
	}
}

func TestNonExpiringAPITokens(t *testing.T) {
	en := newEnv(t, withConfig(func(c *Config) { c.AllowNonExpiringAPITokens = true }))
	tok, info, err := en.s.MintToken(t.Context(), "ci", TokenOptions{NoExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if !info.ExpiresAt.IsZero() {
		t.Errorf("ExpiresAt = %s, want none", info.ExpiresAt)
	}
	en.clock.Advance(10 * DefaultAPITokenMaxLifetime)
	if err := en.s.RotateKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := en.s.Verify(t.Context(), tok); err != nil {
		t.Errorf("a non-expiring token after ten years and a rotation: %v", err)
	}
}
