package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/windlass-cd/windlass/internal/appspec"
)

func TestCredentialsAuth(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "token")
	if err := os.WriteFile(secretFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := writeKey(t, dir, "key", "")
	t.Setenv("WINDLASS_TEST_TOKEN", "env-tok")
	creds := Credentials{Repos: []RepoCredential{
		{URLPrefix: "https://git.example/", Username: "bot", PasswordFile: secretFile},
		{URLPrefix: "https://git.example/team/", PasswordEnv: "WINDLASS_TEST_TOKEN", Bearer: true},
		{URLPrefix: "https://unset.example/", PasswordEnv: "WINDLASS_TEST_UNSET"},
		{URLPrefix: "git@git.example:", SSHPrivateKeyFile: key, InsecureIgnoreHostKey: true},
		{URLPrefix: "ssh://deploy@git.example/", SSHPrivateKeyFile: key, InsecureIgnoreHostKey: true},
		{URLPrefix: "ssh://nokey.example/", PasswordFile: secretFile},
		{URLPrefix: "https://keyonly.example/", SSHPrivateKeyFile: key},
	}}
	tests := []struct {
		url, want string
		wantErr   error
	}{
		{url: "https://git.example/app.git", want: "http-basic-auth - bot:*******"},
		{url: "https://git.example/team/app.git", want: "http-token-auth - *******"},
		{url: "https://other.example/app.git", want: "<nil>"},
		{url: "https://unset.example/app.git", want: "error"},
		{url: "git@git.example:team/app.git", want: "user: git, name: ssh-public-keys"},
		{url: "ssh://deploy@git.example/team/app.git", want: "user: deploy, name: ssh-public-keys"},
		{url: "ssh://git.example:2222/team/app.git", wantErr: ErrAuthFailed}, // no SSH credential
		{url: "ssh://nokey.example/app.git", wantErr: ErrAuthFailed},
		{url: "https://keyonly.example/app.git", wantErr: ErrAuthFailed},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			auth, err := creds.Auth(t.Context(), tt.url)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			case tt.want == "error":
				if err == nil {
					t.Fatal("no error")
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			got := fmt.Sprint(auth)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("auth (-want +got):\n%s", d)
			}
			for _, secret := range []string{"tok-123", "env-tok"} {
				if strings.Contains(got, secret) {
					t.Errorf("auth prints the secret: %s", got)
				}
			}
		})
	}
	auth, _ := creds.Auth(t.Context(), "https://git.example/team/x.git")
	if tok, ok := auth.(*githttp.TokenAuth); !ok || tok.Token != "env-tok" {
		t.Errorf("bearer auth = %#v", auth)
	}
	auth, _ = creds.Auth(t.Context(), "https://git.example/x.git")
	if b, ok := auth.(*githttp.BasicAuth); !ok || b.Password != "tok-123" {
		t.Errorf("basic auth lost the file's secret")
	}
	auth, _ = creds.Auth(t.Context(), "git@git.example:team/app.git")
	if k, ok := auth.(*gitssh.PublicKeys); !ok || k.HostKeyCallback == nil {
		t.Errorf("ssh auth has no host key callback")
	}
}

func TestLoadCredentialsFile(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		p := filepath.Join(dir, fmt.Sprint(len(content))+".json")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write(`{"repositories": [{"urlPrefix": "https://git.example/", "username": "bot", "passwordEnv": "TOKEN"},
		{"urlPrefix": "git@git.example:", "sshPrivateKeyFile": "/keys/id", "sshKnownHostsFile": "/keys/known_hosts"}]}`)
	got, err := LoadCredentialsFile(good)
	if err != nil {
		t.Fatal(err)
	}
	want := Credentials{Repos: []RepoCredential{
		{URLPrefix: "https://git.example/", Username: "bot", PasswordEnv: "TOKEN"},
		{URLPrefix: "git@git.example:", SSHPrivateKeyFile: "/keys/id", SSHKnownHostsFile: "/keys/known_hosts"},
	}}
	if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(RepoCredential{})); d != "" {
		t.Errorf("credentials (-want +got):\n%s", d)
	}
	for _, bad := range []string{
		`{"repositories": [{"urlPrefix": "https://x/", "password": "inline secrets are not accepted"}]}`,
		`{"repositories": [{"username": "no prefix"}]}`,
		`{"repositories": [{"urlPrefix": "https://x/", "passwordFile": "/a", "passwordEnv": "B"}]}`,
		`{"repositories": [{"urlPrefix": "ssh://x/", "sshPrivateKeyFile": "/a", "bearer": true}]}`,
		`not json`,
	} {
		if _, err := LoadCredentialsFile(write(bad)); err == nil {
			t.Errorf("LoadCredentialsFile accepted %s", bad)
		}
	}
	if _, err := LoadCredentialsFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("LoadCredentialsFile of a missing file succeeded")
	}
}

func TestURLHelpers(t *testing.T) {
	tests := []struct {
		url, redacted string
		ssh           bool
		user, host    string
	}{
		{url: "https://user:pa55@git.example/app.git", redacted: "https://user:xxxxx@git.example/app.git"},
		{url: "https://git.example/app.git", redacted: "https://git.example/app.git"},
		{url: "git@git.example:org/app.git", redacted: "git@git.example:org/app.git", ssh: true, user: "git", host: "git.example:22"},
		{url: "ssh://me@git.example:2222/app.git", redacted: "ssh://me@git.example:2222/app.git", ssh: true, user: "me", host: "git.example:2222"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			isSSH, user, host := sshEndpoint(tt.url)
			got := []any{redactURL(tt.url), isSSH, user, host}
			if d := cmp.Diff([]any{tt.redacted, tt.ssh, tt.user, tt.host}, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestTransportNotAllowed: a URL of another transport fails as such, even
// with a credential for it, and says which transports are allowed.
func TestTransportNotAllowed(t *testing.T) {
	for _, url := range []string{"ext::ssh-evil%S", "fd::17", "ftp://git.example.com/org/repo.git"} {
		t.Run(url, func(t *testing.T) {
			a := newActivities(t, Credentials{Repos: []RepoCredential{{URLPrefix: url[:3], SSHPrivateKeyFile: "/nonexistent"}}})
			_, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main"})
			wantErrType(t, err, "TransportNotAllowed")
			if !strings.Contains(err.Error(), appspec.AllowedTransports) {
				t.Errorf("error %q does not name the allowed transports", err)
			}
			if _, err = a.Checkout(t.Context(), url, strings.Repeat("a", 40)); !errors.Is(err, ErrTransportNotAllowed) {
				t.Errorf("checkout: %v, want %v", err, ErrTransportNotAllowed)
			}
		})
	}
}
