package auth

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"zero (defaults)", Config{}, false},
		{"accounts", Config{Accounts: testAccounts}, false},
		{"admin settings", Config{Accounts: []AccountConfig{{Name: AdminAccount, Enabled: false}}}, false},
		{"bad account name", Config{Accounts: []AccountConfig{{Name: "Alice"}}}, true},
		{"secret-breaking account name", Config{Accounts: []AccountConfig{{Name: "a/b"}}}, true},
		{"duplicate account", Config{Accounts: []AccountConfig{{Name: "a"}, {Name: "a"}}}, true},
		{"unknown capability", Config{Accounts: []AccountConfig{{Name: "a", Capabilities: []string{"root"}}}}, true},
		{"negative session lifetime", Config{SessionLifetime: -time.Hour}, true},
		{"default over max", Config{APITokenDefaultLifetime: 2 * DefaultAPITokenMaxLifetime}, true},
		{"short passwords", Config{MinPasswordLength: 4}, true},
		{"bcrypt cost", Config{BcryptCost: 99}, true},
		{"cookie mode", Config{SecureCookie: "sometimes"}, true},
		{"rate limit", Config{LoginRateLimit: RateLimitConfig{Window: -time.Second}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if d := cmp.Diff(tt.wantErr, err != nil); d != "" {
				t.Errorf("Validate() = %v (-wantErr +gotErr): %s", err, d)
			}
		})
	}
}

func TestNewRequiresStores(t *testing.T) {
	if _, err := New(Config{}, nil, RedisRevocations{}, nil); err == nil {
		t.Error("New without a secret store succeeded")
	}
}
