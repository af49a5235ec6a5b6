package temporalx

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestDialDeadAddress(t *testing.T) {
	// A port that was just free and nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	c, err := Dial(ctx, ClientConfig{HostPort: addr})
	if err == nil {
		c.Close()
		t.Fatalf("Dial(%s) succeeded with nothing listening", addr)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name the address %s", err, addr)
	}
	if elapsed := time.Since(began); elapsed > 5*time.Second {
		t.Errorf("Dial took %s to give up on a 500ms context", elapsed)
	}
	t.Logf("error: %v", err)
}
