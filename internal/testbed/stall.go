package testbed

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
)

// TB is what the stalling servers need of a test.
type TB interface {
	Fataler
	Cleanup(func())
}

// SilentListener accepts TCP connections on 127.0.0.1 and never writes to
// them: a server that never answers, not even a TLS or SSH handshake. It
// closes them when the test ends.
func SilentListener(t TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
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
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	return ln.Addr().String()
}

// Stall says what a StallingServer sends before it falls silent.
type Stall struct {
	// TLS serves HTTPS (the client must trust the server's certificate
	// or skip verification).
	TLS bool
	// Headers sends a 200 status line and the headers, with ContentType;
	// Body then starts the body. Without Headers nothing follows the
	// request (and the handshake).
	Headers     bool
	ContentType string
	Body        string
}

// StallingServer is an HTTP server whose every answer stops after what s
// says, and stays silent until the client hangs up or the test ends.
func StallingServer(t TB, s Stall) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Headers {
			if s.ContentType != "" {
				w.Header().Set("Content-Type", s.ContentType)
			}
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, s.Body)
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	srv := httptest.NewUnstartedServer(h)
	if s.TLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // first: srv.Close waits for the handlers
	return srv
}
