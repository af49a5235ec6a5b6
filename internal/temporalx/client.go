package temporalx

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
)

const (
	defaultFrontendAddr = "127.0.0.1:7233"
	defaultNamespace    = "default"

	dialAttemptTimeout = 5 * time.Second
	dialMinBackoff     = 100 * time.Millisecond
	dialMaxBackoff     = 2 * time.Second
)

// ClientConfig says where Dial connects.
type ClientConfig struct {
	// HostPort of the frontend; default 127.0.0.1:7233.
	HostPort string
	// Namespace; default "default".
	Namespace string
	// Logger receives the SDK's logs; default slog.Default().
	Logger *slog.Logger
	// TLS, when set, secures the connection (mTLS with a client
	// certificate, or server verification only).
	TLS *tls.Config
	// Credentials authenticate the client (an API key for Temporal Cloud).
	Credentials client.Credentials
	// MetricsHandler receives the SDK's metrics and the workflows' own.
	MetricsHandler client.MetricsHandler
	// Interceptors wrap client calls, and worker calls of the workers
	// created from the client.
	Interceptors []interceptor.ClientInterceptor
}

// Dial connects an SDK client, retrying with backoff until it succeeds or ctx
// ends. The error then names the address and wraps the last dial error.
func Dial(ctx context.Context, cfg ClientConfig) (client.Client, error) {
	if cfg.HostPort == "" {
		cfg.HostPort = defaultFrontendAddr
	}
	if cfg.Namespace == "" {
		cfg.Namespace = defaultNamespace
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	opts := client.Options{
		HostPort:  cfg.HostPort,
		Namespace: cfg.Namespace,
		Logger:    sdklog.NewStructuredLogger(logger),

		ConnectionOptions: client.ConnectionOptions{TLS: cfg.TLS, GrpcCompression: requestCompression(cfg.HostPort)},
		Credentials:       cfg.Credentials,
		MetricsHandler:    cfg.MetricsHandler,
		Interceptors:      cfg.Interceptors,
	}

	backoff := dialMinBackoff
	for attempt := 1; ; attempt++ {
		attemptCtx, cancel := context.WithTimeout(ctx, dialAttemptTimeout)
		c, err := client.DialContext(attemptCtx, opts)
		cancel()
		if err == nil {
			return c, nil
		}
		logger.Debug("temporal dial failed, retrying",
			"address", cfg.HostPort, "attempt", attempt, "error", err)

		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("temporal unreachable at %s: %w", cfg.HostPort, err)
		case <-timer.C:
		}
		backoff = min(2*backoff, dialMaxBackoff)
	}
}

// requestCompression is none for a frontend on the loopback interface
// (windlass dev, a worker beside its Temporal), where gzip, the SDK's
// default, only costs CPU at both ends: every workflow task's completion
// and every poll's answer; nil, the SDK's default, elsewhere.
func requestCompression(hostPort string) client.GrpcCompression {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return &client.GrpcCompressionNone{}
	}
	return nil
}
