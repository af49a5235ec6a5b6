package api

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"net/http"
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
