package source

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/net/proxy"

	"github.com/windlass-cd/windlass/internal/netdeadline"
)

// DefaultNetTimeout bounds a Git server's silence: the dial, the TLS or
// SSH handshake, and each read or write after it.
const DefaultNetTimeout = netdeadline.DefaultTimeout

// TimeoutError is a Git server that did not answer in time. It is
// retryable: the server may come back.
type TimeoutError = netdeadline.TimeoutError

// deadlineScheme is the proxy scheme through which go-git's SSH transport
// dials: go-git's SSH dial takes no context and sets no deadline after the
// dial, so a server that accepts and never answers would hang it for ever.
// The "proxy" connects directly (honouring ALL_PROXY) and puts a deadline
// on every read and write.
const deadlineScheme = "windlass-deadline"

func init() {
	proxy.RegisterDialerType(deadlineScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		d, err := time.ParseDuration(u.Query().Get("timeout"))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: bad timeout %q", deadlineScheme, u.Query().Get("timeout"))
		}
		return netdeadline.Dialer{Timeout: d, Base: proxy.Dial}, nil
	})
	// go-git's HTTP(S) transport sets no deadline after the TLS handshake:
	// a server that sends its headers and stalls would hang it for ever.
	// The timeout travels in the context (netContext).
	c := githttp.NewClient(&http.Client{Transport: netdeadline.Transport(DefaultNetTimeout)})
	client.InstallProtocol("https", c)
	client.InstallProtocol("http", c)
}

// netOptions are the proxy options that bound repoURL's connection by d:
// for HTTP(S), the repository's proxy if any, bounded through the
// context (netContext).
func netOptions(repoURL string, d time.Duration, httpProxy string) transport.ProxyOptions {
	if isSSH, _, _ := sshEndpoint(repoURL); !isSSH {
		return transport.ProxyOptions{URL: httpProxy}
	}
	if d <= 0 {
		d = DefaultNetTimeout
	}
	return transport.ProxyOptions{URL: deadlineScheme + "://direct/?timeout=" + d.String()}
}

// netContext bounds the HTTP(S) connections go-git dials with ctx by d
// (0: DefaultNetTimeout).
func netContext(ctx context.Context, d time.Duration) context.Context {
	return netdeadline.WithTimeout(ctx, d)
}

// ListRefs lists the references of repoURL (ls-remote) with auth. A server
// that does not answer fails after timeout (0: DefaultNetTimeout) of
// silence, with a *TimeoutError.
func ListRefs(ctx context.Context, repoURL string, auth transport.AuthMethod, timeout time.Duration) ([]*plumbing.Reference, error) {
	return ListRefsWith(ctx, repoURL, auth, TransportOptions{}, timeout)
}

// ListRefsWith is ListRefs with a repository's HTTPS settings.
func ListRefsWith(ctx context.Context, repoURL string, auth transport.AuthMethod, o TransportOptions, timeout time.Duration) ([]*plumbing.Reference, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repoURL}})
	refs, err := rem.ListContext(netContext(ctx, timeout), &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled,
		ProxyOptions: netOptions(repoURL, timeout, o.Proxy), CABundle: o.CABundle, ClientCert: o.ClientCert, ClientKey: o.ClientKey,
		InsecureSkipTLS: o.InsecureSkipTLS})
	if err != nil {
		return nil, classify(repoURL, err)
	}
	return refs, nil
}
