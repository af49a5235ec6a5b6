package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrPluginServerDown is a plugin server that cannot be reached; retrying
// may find it back.
var ErrPluginServerDown = errors.New("plugin server unreachable")

// PluginClient reaches a plugin server over a unix socket or loopback
// HTTP.
type PluginClient struct {
	addr string
	base string
	hc   *http.Client
}

// NewPluginClient dials addr: "unix:///path/to.sock", an absolute socket
// path, or "http://127.0.0.1:PORT".
func NewPluginClient(addr string) (*PluginClient, error) {
	c := &PluginClient{addr: addr}
	tr := &http.Transport{DisableCompression: true, MaxIdleConns: 4}
	sock := strings.TrimPrefix(addr, "unix://")
	switch {
	case strings.HasPrefix(sock, "/"):
		c.base = "http://plugin-server"
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }
	case strings.HasPrefix(addr, "http://"):
		u, err := url.Parse(addr)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("plugin server address %q: want http://host:port", addr)
		}
		// The checkout and the plugins' output travel in the clear.
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("plugin server address %q: only loopback is allowed over HTTP; use a unix socket", addr)
		}
		c.base = "http://" + u.Host
	default:
		return nil, fmt.Errorf("plugin server address %q: want unix:///path, an absolute socket path or http://host:port", addr)
	}
	c.hc = &http.Client{Transport: tr}
	return c, nil
}

// Address is the address the client dials.
func (c *PluginClient) Address() string { return c.addr }

// Ping checks that the server answers.
func (c *PluginClient) Ping(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+PluginHealthPath, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("plugin server at %s: health: %s", c.addr, resp.Status)
	}
	return nil
}

// run streams job and the checkout root to the server and reads the
// result. A symlink out of root fails before the server runs anything.
func (c *PluginClient) run(ctx context.Context, job pluginJob, root string) (pluginResult, error) {
	pr, pw := io.Pipe()
	sent := make(chan error, 1)
	go func() {
		err := writeFrame(pw, job)
		if err == nil {
			err = writeCheckoutTar(pw, root)
		}
		pw.CloseWithError(err)
		sent <- err
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PluginRunPath, pr)
	if err != nil {
		pr.Close()
		return pluginResult{}, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.hc.Do(req)
	pr.CloseWithError(io.ErrClosedPipe) // the writer stops if the server stopped reading
	if serr := <-sent; serr != nil && !errors.Is(serr, io.ErrClosedPipe) {
		if resp != nil {
			resp.Body.Close()
		}
		return pluginResult{}, serr // the checkout's own error (a symlink out of it)
	}
	if err != nil {
		return pluginResult{}, c.transportError(err)
	}
	defer resp.Body.Close()
	var out pluginResponse
	limit := maxPluginResponse(job.Plugins)
	if err := json.NewDecoder(io.LimitReader(resp.Body, limit)).Decode(&out); err != nil {
		return pluginResult{}, fmt.Errorf("plugin server at %s: %s: %w", c.addr, resp.Status, err)
	}
	if out.Error != "" {
		return pluginResult{}, sandboxError(out.Error, out.ErrorType)
	}
	return out.pluginResult, nil
}

// maxPluginResponse bounds a response: the largest output any plugin may
// print, base64-encoded, and room for the rest.
func maxPluginResponse(plugins []PluginConfig) int64 {
	var most int64
	for _, p := range plugins {
		most = max(most, p.maxOutput())
	}
	return most/3*4 + 1<<20
}

func (c *PluginClient) transportError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("%w at %s (is windlass plugin-server running?): %w", ErrPluginServerDown, c.addr, op)
	}
	return fmt.Errorf("plugin server at %s: %w", c.addr, err)
}
