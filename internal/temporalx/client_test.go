package temporalx

import (
	"context"
	"go.temporal.io/sdk/client"
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

// Requests to a frontend on the loopback interface go uncompressed;
// elsewhere the SDK's default (gzip) stays.
func TestRequestCompression(t *testing.T) {
	for _, tc := range []struct {
		hostPort string
		none     bool
	}{
		{hostPort: "127.0.0.1:7233", none: true},
		{hostPort: "127.0.0.53:7233", none: true},
		{hostPort: "[::1]:7233", none: true},
		{hostPort: "localhost:7233", none: true},
		{hostPort: "temporal.internal:7233"},
		{hostPort: "10.0.0.5:7233"},
		{hostPort: "my-ns.a1b2c.tmprl.cloud:7233"},
	} {
		t.Run(tc.hostPort, func(t *testing.T) {
			got := requestCompression(tc.hostPort)
			if _, none := got.(*client.GrpcCompressionNone); none != tc.none || (!tc.none && got != nil) {
				t.Fatalf("requestCompression(%q) = %#v, want none = %v", tc.hostPort, got, tc.none)
			}
		})
	}
}
