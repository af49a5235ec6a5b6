package source

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// silentServer accepts TCP connections and never writes. Each accepted
// connection is sent on the returned channel.
func silentServer(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 8)
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
			conns <- c
		}
	}()
	return ln.Addr().String(), conns
}

// TestSSHSilentServer: ls-remote and fetch against a server that accepts
// and never answers fail with a timeout, and drop the connection.
func TestSSHSilentServer(t *testing.T) {
	addr, conns := silentServer(t)
	key, _ := writeKey(t, t.TempDir(), "key", "")
	url := "ssh://git@" + addr + "/team/app.git"
	creds := Credentials{Repos: []RepoCredential{{URLPrefix: "ssh://git@" + addr, SSHPrivateKeyFile: key, InsecureIgnoreHostKey: true}}}
	a := newActivities(t, creds, WithNetTimeout(200*time.Millisecond))

	steps := []struct {
		name string
		run  func() error
	}{
		{name: "ls-remote", run: func() error {
			_, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: url, Revision: "main"})
			return err
		}},
		{name: "fetch", run: func() error {
			_, err := a.Checkout(t.Context(), url, strings.Repeat("a", 40))
			return err
		}},
		{name: "ListRefs", run: func() error {
			auth, err := creds.Auth(t.Context(), url)
			if err != nil {
				return err
			}
			_, err = ListRefs(t.Context(), url, auth, 200*time.Millisecond)
			var te *TimeoutError
			if !errors.As(err, &te) {
				t.Errorf("error %v is not a *TimeoutError", err)
			}
			return err
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			errc := make(chan error, 1)
			go func() { errc <- s.run() }()
			var err error
			select {
			case err = <-errc:
			case <-time.After(time.Minute):
				t.Fatal("no answer: the operation hangs")
			}
			if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
				t.Fatalf("error = %v, want a timeout", err)
			}
			wantErrType(t, err, "") // retryable
			// The client has hung up: the server reads its greeting, then EOF.
			c := <-conns
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Errorf("the connection stays open: %v", err)
			}
		})
	}
}
