package netdeadline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// DefaultTimeout is how long a peer may stay silent by default.
const DefaultTimeout = 10 * time.Second

type timeoutKey struct{}

// WithTimeout makes d (when positive) the timeout of connections dialled
// with ctx, whatever the Dialer's own.
func WithTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, timeoutKey{}, d)
}

// Dialer dials connections whose silence is bounded.
type Dialer struct {
	// Timeout bounds the dial and each read or write after it (0:
	// DefaultTimeout); a timeout in the dial's context wins.
	Timeout time.Duration
	// Base dials (nil: a net.Dialer).
	Base func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (d Dialer) timeout(ctx context.Context) time.Duration {
	if t, ok := ctx.Value(timeoutKey{}).(time.Duration); ok {
		return t
	}
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultTimeout
}

// Dial dials without a context.
func (d Dialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext dials addr within the timeout and ctx.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	timeout := d.timeout(ctx)
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base := d.Base
	if base == nil {
		base = (&net.Dialer{}).DialContext
	}
	c, err := base(dctx, network, addr)
	if err != nil {
		// Our timer, not the caller's context, ended the dial.
		if ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)) {
			return nil, &TimeoutError{Addr: addr, Op: "connect", After: timeout, Err: err}
		}
		return nil, err
	}
	return &conn{Conn: c, addr: addr, timeout: timeout}, nil
}

// Transport is a clone of http.DefaultTransport whose connections fail
// after timeout of silence (0: DefaultTimeout, or the request context's;
// see WithTimeout). It closes idle connections before their pending read
// would time out.
func Transport(timeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = Dialer{Timeout: timeout}.DialContext
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	t.IdleConnTimeout = timeout / 2
	return t
}

// conn fails a read or write that makes no progress for timeout.
type conn struct {
	net.Conn
	addr    string
	timeout time.Duration
}

func (c *conn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	n, err := c.Conn.Read(p)
	if err != nil && isTimeout(err) {
		err = &TimeoutError{Addr: c.addr, Op: "read", After: c.timeout, Err: err}
	}
	return n, err
}

// Write also restarts the wait of a pending read: on a kept-alive
// connection the read for the next answer starts while it is idle, and
// the wait for an answer starts with the request.
func (c *conn) Write(p []byte) (int, error) {
	deadline := time.Now().Add(c.timeout)
	_ = c.Conn.SetWriteDeadline(deadline)
	_ = c.Conn.SetReadDeadline(deadline)
	n, err := c.Conn.Write(p)
	if err != nil && isTimeout(err) {
		err = &TimeoutError{Addr: c.addr, Op: "write", After: c.timeout, Err: err}
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// TimeoutError is a peer that stayed silent for the timeout. It is
// retryable: the peer may come back.
type TimeoutError struct {
	Addr  string
	Op    string // connect, read or write
	After time.Duration
	Err   error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s %s: timed out after %s without an answer", e.Op, e.Addr, e.After)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true, as net.Error does.
func (e *TimeoutError) Timeout() bool { return true }
