package source

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/testbed"
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

// step is one Git operation against a silent server.
type step struct {
	name string
	run  func() error
}

// silentSteps are ls-remote, fetch and ListRefs of url with a's 200 ms net
// timeout; ListRefs must fail with a *TimeoutError.
func silentSteps(t *testing.T, a *Activities, creds CredentialResolver, url string) []step {
	return []step{
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
}

// wantTimedOut runs s and checks that it fails, retryably, with the 200 ms
// timeout; a minute without an answer is a hang.
func wantTimedOut(t *testing.T, s step) {
	t.Helper()
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
}

// TestSSHSilentServer: ls-remote and fetch against a server that accepts
// and never answers fail with a timeout, and drop the connection.
func TestSSHSilentServer(t *testing.T) {
	addr, conns := silentServer(t)
	key, _ := writeKey(t, t.TempDir(), "key", "")
	url := "ssh://git@" + addr + "/team/app.git"
	creds := Credentials{Repos: []RepoCredential{{URLPrefix: "ssh://git@" + addr, SSHPrivateKeyFile: key, InsecureIgnoreHostKey: true}}}
	a := newActivities(t, creds, WithNetTimeout(200*time.Millisecond))
	for _, s := range silentSteps(t, a, creds, url) {
		t.Run(s.name, func(t *testing.T) {
			wantTimedOut(t, s)
			// The client has hung up: the server reads its greeting, then EOF.
			c := <-conns
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Errorf("the connection stays open: %v", err)
			}
		})
	}
}

// TestHTTPSilentServer: ls-remote and fetch over HTTP(S) against a server
// that accepts and never completes the TLS handshake, one that sends its
// headers and stalls, and one that stalls in the middle of its body, fail
// with a timeout instead of hanging.
func TestHTTPSilentServer(t *testing.T) {
	const adv = "application/x-git-upload-pack-advertisement"
	servers := []struct{ name, url string }{
		{name: "tls handshake", url: "https://" + testbed.SilentListener(t) + "/team/app.git"},
		{name: "after the headers", url: testbed.StallingServer(t, testbed.Stall{Headers: true, ContentType: adv}).URL + "/team/app.git"},
		{name: "in the body", url: testbed.StallingServer(t, testbed.Stall{Headers: true, ContentType: adv,
			Body: "001e# service=git-upload-pack\n"}).URL + "/team/app.git"},
	}
	a := newActivities(t, Credentials{}, WithNetTimeout(200*time.Millisecond))
	for _, srv := range servers {
		for _, s := range silentSteps(t, a, Credentials{}, srv.url) {
			t.Run(srv.name+"/"+s.name, func(t *testing.T) { wantTimedOut(t, s) })
		}
	}
}
