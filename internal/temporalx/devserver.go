package temporalx

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
)

// ErrDevServerNotBuiltIn is StartDevServer's error in a build without the
// embedded server (-tags nodevserver, the image's production build).
var ErrDevServerNotBuiltIn = errors.New("the embedded Temporal server is not built in (built with -tags nodevserver)")

// DevServerConfig configures StartDevServer.
type DevServerConfig struct {
	// DataDir holds the SQLite database, <DataDir>/temporal.db. Required;
	// created if missing.
	DataDir string
	// Namespace registered at start; default "default".
	Namespace string
	// FrontendAddr is the gRPC host:port; default 127.0.0.1:7233. Port 0
	// picks a free port; an empty host means 127.0.0.1.
	FrontendAddr string
	// UIAddr is the Web UI host:port, conventionally 127.0.0.1:8233. "" or
	// "off" disables the UI. Port 0 picks a free port; an empty host means
	// 127.0.0.1.
	UIAddr string
	// Retention is how long the namespace keeps closed workflows; default
	// DefaultRetention. It is set on every start.
	Retention time.Duration
	// RetentionJitter spreads the deletion of workflows past retention over
	// this long, for every namespace of the server; default a tenth of
	// Retention, at most 30 minutes.
	RetentionJitter time.Duration
	// Archival, when set, archives the history and visibility of closed
	// workflows, readable after retention deletes them; nil: no archive.
	Archival *ArchivalConfig
	// SearchAttributes are custom search attributes registered at start.
	SearchAttributes map[string]enums.IndexedValueType
	// Logger; default slog.Default(). The server's own logs are passed on at
	// warn level and above.
	Logger *slog.Logger
}

// DevServer is a running embedded Temporal server.
type DevServer struct {
	frontendAddr string
	uiURL        string
	namespace    string

	stopOnce sync.Once
	stopErr  error
	stop     func() error
}

// FrontendAddr is the host:port clients dial.
func (s *DevServer) FrontendAddr() string { return s.frontendAddr }

// UIURL is the Web UI's base URL, or "" when the UI is off.
func (s *DevServer) UIURL() string { return s.uiURL }

// Namespace is the namespace registered at start.
func (s *DevServer) Namespace() string { return s.namespace }

// Stop stops the UI, then the server. It is safe to call more than once.
func (s *DevServer) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}
