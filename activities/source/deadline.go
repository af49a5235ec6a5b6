package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/net/proxy"
)

// DefaultNetTimeout bounds an SSH dial, and each read or write of an SSH
// connection from the handshake on: the HTTPS transport's TLS handshake
// timeout.
const DefaultNetTimeout = 10 * time.Second

// deadlineScheme is the proxy scheme through which go-git's SSH transport
// dials: go-git's SSH dial takes no context and sets no deadline after the
// dial, so a server that accepts and never answers would hang it for ever.
// The "proxy" connects directly and puts a deadline on every read and
// write.
const deadlineScheme = "windlass-deadline"

func init() {
	proxy.RegisterDialerType(deadlineScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		d, err := time.ParseDuration(u.Query().Get("timeout"))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: bad timeout %q", deadlineScheme, u.Query().Get("timeout"))
		}
		return deadlineDialer{timeout: d}, nil
	})
}

// netOptions are the proxy options that bound repoURL's connection by d:
// none for HTTP(S), whose transport has its own timeouts.
func netOptions(repoURL string, d time.Duration) transport.ProxyOptions {
	if isSSH, _, _ := sshEndpoint(repoURL); !isSSH {
		return transport.ProxyOptions{}
	}
	if d <= 0 {
		d = DefaultNetTimeout
	}
	return transport.ProxyOptions{URL: deadlineScheme + "://direct/?timeout=" + d.String()}
}

// ListRefs lists the references of repoURL (ls-remote) with auth. An SSH
// server that does not answer fails after timeout (0: DefaultNetTimeout)
// of silence.
func ListRefs(ctx context.Context, repoURL string, auth transport.AuthMethod, timeout time.Duration) ([]*plumbing.Reference, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repoURL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled, ProxyOptions: netOptions(repoURL, timeout)})
	if err != nil {
		return nil, classify(repoURL, err)
	}
	return refs, nil
}

type deadlineDialer struct{ timeout time.Duration }

var _ proxy.ContextDialer = deadlineDialer{}

func (d deadlineDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext dials like go-git would (honouring ALL_PROXY), within the
// timeout.
func (d deadlineDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	c, err := proxy.Dial(ctx, network, addr)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, &TimeoutError{Addr: addr, Op: "connect", After: d.timeout, Err: err}
		}
		return nil, err
	}
	return &deadlineConn{Conn: c, addr: addr, timeout: d.timeout}, nil
}

// deadlineConn fails a read or write that makes no progress for timeout.
type deadlineConn struct {
	net.Conn
	addr    string
	timeout time.Duration
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	n, err := c.Conn.Read(p)
	if err != nil && isTimeout(err) {
		err = &TimeoutError{Addr: c.addr, Op: "read", After: c.timeout, Err: err}
	}
	return n, err
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
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

// TimeoutError is a Git server that did not answer in time. It is
// retryable: the server may come back.
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
