package api

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/windlass-cd/windlass/internal/settings"
)

// TestRepositoryConnectionTimeout: the connection test of an SSH server
// that accepts and never answers fails with a timeout.
func TestRepositoryConnectionTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // never writes
		}
	}()
	en := newEnv(t, func(o *Options) { o.RepoCheck, o.GitTimeout = nil, 200*time.Millisecond })
	repo := settings.Repository{URL: "ssh://git@" + ln.Addr().String() + "/team/app.git", SSHPrivateKey: testSSHKey(t), InsecureIgnoreHostKey: true}
	runSteps(t, en, []step{
		{name: "register", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, repo)},
			status: http.StatusUnprocessableEntity, field: "url", detail: "timed out after 200ms"},
	})
}

// testSSHKey is a new ed25519 private key in PEM.
func testSSHKey(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

// TestRepositoryURLPassword: a URL with a password is refused, and the
// password shows in no response and no log line.
func TestRepositoryURLPassword(t *testing.T) {
	const password = "typed-in-PASSWORD"
	var logs bytes.Buffer
	en := newEnv(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	withPassword := "https://deploy:" + password + "@git.example.com/team-a/infra.git"
	var bodies []response
	for _, tt := range []struct {
		name string
		url  string
	}{
		{name: "https", url: withPassword},
		{name: "ssh", url: "ssh://git:" + password + "@git.example.com/team-a/infra.git"},
		{name: "unparsable", url: "https://deploy:" + password + "@git.example.com:port/infra.git"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/api/v1/repositories", "/api/v1/repositories?upsert=true"} {
				res := en.admin(request{method: http.MethodPost, path: path, body: jsonBody(t, settings.Repository{URL: tt.url})})
				res.wantProblem(t, http.StatusBadRequest, "", "use the username and password")
				bodies = append(bodies, res)
			}
		})
	}
	bodies = append(bodies, en.admin(request{method: http.MethodGet, path: "/api/v1/repositories"}),
		en.admin(request{method: http.MethodGet, path: "/api/v1/repositories/" + url.PathEscape(withPassword)}))
	for _, res := range bodies {
		if strings.Contains(string(res.body), password) {
			t.Errorf("a response shows the password: %s", res.body)
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log shows the password:\n%s", logs.String())
	}
	if _, err := en.settings.Repo(t.Context(), withPassword); err == nil {
		t.Error("the repository was stored")
	}
}

// TestRepositoryTransport: a URL of a transport other than Git's usual
// ones is refused as such.
func TestRepositoryTransport(t *testing.T) {
	en := newEnv(t)
	runSteps(t, en, []step{
		{name: "ext", req: request{method: http.MethodPost, path: "/api/v1/repositories", body: jsonBody(t, settings.Repository{URL: "ext::ssh-evil%S"})},
			status: http.StatusBadRequest, detail: `transport "ext" is not allowed; use https, http, ssh`},
	})
}
