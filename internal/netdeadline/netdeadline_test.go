package netdeadline

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// serve accepts connections on a loopback listener and hands each to
// handle, closing it after.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			go func() { defer c.Close(); handle(c) }()
		}
	}()
	return ln.Addr().String()
}

// within runs f and fails the test if it does not return within a minute:
// the bound is on hanging, not on the timeout's precision.
func within[T any](t *testing.T, f func() T) T {
	t.Helper()
	c := make(chan T, 1)
	go func() { c <- f() }()
	select {
	case v := <-c:
		return v
	case <-time.After(time.Minute):
		t.Fatal("no answer: the operation hangs")
		panic("unreachable")
	}
}

// wantTimeout checks that err is a *TimeoutError of op naming after.
func wantTimeout(t *testing.T, err error, op, after string) {
	t.Helper()
	var te *TimeoutError
	if !errors.As(err, &te) || te.Op != op || !strings.Contains(err.Error(), "timed out after "+after) {
		t.Fatalf("error = %v, want a %s timeout after %s", err, op, after)
	}
}

// A read from a peer that accepts and never writes fails with the timeout;
// a timeout in the context wins over the Dialer's.
func TestSilentPeer(t *testing.T) {
	addr := serve(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	for _, tt := range []struct {
		name  string
		d     Dialer
		ctx   context.Context
		after string
	}{
		{name: "dialer", d: Dialer{Timeout: 200 * time.Millisecond}, ctx: t.Context(), after: "200ms"},
		{name: "context", d: Dialer{Timeout: time.Hour}, ctx: WithTimeout(t.Context(), 100*time.Millisecond), after: "100ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.d.DialContext(tt.ctx, "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			err = within(t, func() error { _, err := c.Read(make([]byte, 1)); return err })
			wantTimeout(t, err, "read", tt.after)
		})
	}
}

// A dial that does not complete in time fails with a connect timeout; one
// the caller cancels fails with the caller's error.
func TestDialTimeout(t *testing.T) {
	hang := func(ctx context.Context, _, _ string) (net.Conn, error) { <-ctx.Done(); return nil, ctx.Err() }
	d := Dialer{Timeout: 100 * time.Millisecond, Base: hang}
	err := within(t, func() error { _, err := d.DialContext(t.Context(), "tcp", "192.0.2.1:443"); return err })
	wantTimeout(t, err, "connect", "100ms")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = Dialer{Timeout: time.Hour, Base: hang}.DialContext(ctx, "tcp", "192.0.2.1:443")
	var te *TimeoutError
	if !errors.Is(err, context.Canceled) || errors.As(err, &te) {
		t.Fatalf("error = %v, want the caller's cancellation", err)
	}
}

// A transfer that keeps moving is not cut off, however much longer than
// the timeout it takes.
func TestProgressingTransfer(t *testing.T) {
	const chunks = 30
	addr := serve(t, func(c net.Conn) {
		for range chunks {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond) // the pace of a slow server
		}
	})
	c, err := Dialer{Timeout: time.Second}.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b []byte
	err = within(t, func() error { var rerr error; b, rerr = io.ReadAll(c); return rerr })
	if len(b) != chunks || err != nil {
		t.Fatalf("read %d bytes (%v), want %d", len(b), err, chunks)
	}
}

// Transport: a server that sends its headers and stalls fails the read of
// the body with a timeout.
func TestTransportStalledBody(t *testing.T) {
	srv := testbed.StallingServer(t, testbed.Stall{Headers: true, Body: "partial"})
	hc := &http.Client{Transport: Transport(200 * time.Millisecond)}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	err = within(t, func() error { _, err := io.ReadAll(resp.Body); return err })
	wantTimeout(t, err, "read", "200ms")
}
