package roles

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

// DefaultPluginSocket is where the Kubernetes sidecar listens.
const DefaultPluginSocket = "unix:///run/windlass/plugins.sock"

// inClusterToken is where Kubernetes mounts a pod's service account
// token; the plugin server warns when it can read one.
const inClusterToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

const (
	msgPluginServerListening = "plugin server listening"
	msgPluginServerHasToken  = "the plugin server can read a service account token: its plugins can too (set automountServiceAccountToken: false)"
	msgPluginServerHasKube   = "the plugin server has a kubeconfig in its environment: its plugins can read it"
)

// pluginServerConfig configures `windlass plugin-server`.
type pluginServerConfig struct {
	Listen   string
	LogLevel string
	render.PluginServerConfig
}

func loadPluginServerConfig(args []string) (pluginServerConfig, error) {
	var c pluginServerConfig
	fs := flag.NewFlagSet("plugin-server", flag.ContinueOnError)
	fs.StringVar(&c.Listen, "listen", env("PLUGIN_SERVER_LISTEN", DefaultPluginSocket), "unix:///path or 127.0.0.1:port to serve workers on (env WINDLASS_PLUGIN_SERVER_LISTEN)")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env WINDLASS_LOG_LEVEL)")
	fs.StringVar(&c.WorkDir, "work-dir", env("PLUGIN_SERVER_WORK_DIR", os.TempDir()), "scratch space: one copy of the checkout per run (env WINDLASS_PLUGIN_SERVER_WORK_DIR)")
	fs.Int64Var(&c.MaxCheckoutBytes, "max-checkout-bytes", envInt64("PLUGIN_SERVER_MAX_CHECKOUT_BYTES", render.DefaultPluginCheckoutBytes), "largest checkout a worker may stream, in file bytes (env WINDLASS_PLUGIN_SERVER_MAX_CHECKOUT_BYTES)")
	fs.IntVar(&c.MaxCheckoutFiles, "max-checkout-files", envInt("PLUGIN_SERVER_MAX_CHECKOUT_FILES", render.DefaultPluginCheckoutFiles), "most files and directories in a streamed checkout (env WINDLASS_PLUGIN_SERVER_MAX_CHECKOUT_FILES)")
	fs.IntVar(&c.Concurrency, "concurrency", envInt("PLUGIN_SERVER_CONCURRENCY", render.DefaultPluginConcurrency), "plugin runs at once; others wait (env WINDLASS_PLUGIN_SERVER_CONCURRENCY)")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: plugin-server takes no arguments, got %q", cmdline.ErrUsage, fs.Args())
	}
	if _, _, err := splitListen(c.Listen); err != nil {
		return c, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	return c, nil
}

// splitListen turns a listen address into a network and an address.
func splitListen(addr string) (network, address string, _ error) {
	if p, ok := strings.CutPrefix(addr, "unix://"); ok {
		if !filepath.IsAbs(p) {
			return "", "", fmt.Errorf("listen %q: want unix:///absolute/path", addr)
		}
		return "unix", p, nil
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "", "", fmt.Errorf("listen %q: the plugin server serves loopback or a unix socket only", addr)
		}
		return "tcp", addr, nil
	}
	return "", "", fmt.Errorf("listen %q: want unix:///absolute/path or 127.0.0.1:port", addr)
}

// PluginServer runs `windlass plugin-server` until ctx ends.
func PluginServer(ctx context.Context, args []string) error {
	return start(ctx, args, loadPluginServerConfig, runPluginServer)
}

func runPluginServer(ctx context.Context, cfg pluginServerConfig) error {
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	cfg.Logger = log
	srv, err := render.NewPluginServer(cfg.PluginServerConfig)
	if err != nil {
		return err
	}
	if _, err := os.Stat(inClusterToken); err == nil {
		log.Warn(msgPluginServerHasToken, "path", inClusterToken)
	}
	if os.Getenv("KUBECONFIG") != "" {
		log.Warn(msgPluginServerHasKube)
	}
	network, addr, _ := splitListen(cfg.Listen)
	if network == "unix" {
		if err := os.MkdirAll(filepath.Dir(addr), 0o700); err != nil {
			return fmt.Errorf("plugin server socket: %w", err)
		}
		_ = os.Remove(addr) // left by a process that died
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return fmt.Errorf("plugin server: listen on %s: %w", cfg.Listen, err)
	}
	if network == "unix" {
		if err := os.Chmod(addr, 0o600); err != nil {
			ln.Close()
			return fmt.Errorf("plugin server socket: %w", err)
		}
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Info(msgPluginServerListening, "address", cfg.Listen)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	if network == "unix" {
		_ = os.Remove(addr)
	}
	return err
}

// pluginKeep are the variables a plugin server child inherits: none of the
// worker's settings or credentials (no KUBECONFIG, no WINDLASS_*, not even
// HOME), only what plugin tools need to run and reach the network.
var pluginKeep = []string{"PATH", "TMPDIR", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "ALL_PROXY", "all_proxy"}

// pluginChildEnviron is env scrubbed for a plugin server child (which
// gets a private HOME of its own).
func pluginChildEnviron(env []string) []string {
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); slices.Contains(pluginKeep, name) {
			out = append(out, kv)
		}
	}
	return out
}

const (
	msgPluginChildStarted = "plugin server child started"
	msgPluginChildExited  = "plugin server child exited, restarting"
)

// pluginChild is a plugin server that the worker runs as a child process
// of its own binary, and restarts when it dies.
type pluginChild struct {
	exe    string
	env    []string
	dir    string
	sock   string
	log    *slog.Logger
	client *render.PluginClient
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	cmd *exec.Cmd // the running child
}

// pluginChildStartTimeout bounds the wait for a child's socket.
const pluginChildStartTimeout = 15 * time.Second

// startPluginChild starts `exe plugin-server` with env (pass
// pluginChildEnviron's) and a private HOME, listening on a socket in a private directory, and
// waits until it answers.
func startPluginChild(ctx context.Context, exe string, env []string, log *slog.Logger) (*pluginChild, error) {
	dir, err := os.MkdirTemp("", "windlass-plugins-")
	if err != nil {
		return nil, fmt.Errorf("plugin server: %w", err)
	}
	c := &pluginChild{exe: exe, env: env, dir: dir, sock: filepath.Join(dir, "plugins.sock"), log: log, done: make(chan struct{})}
	for _, d := range []string{"work", "home"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("plugin server: %w", err)
		}
	}
	if c.client, err = render.NewPluginClient("unix://" + c.sock); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd, exited, err := c.spawn()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.waitReady(ctx, exited); err != nil {
		stopCmd(cmd, exited)
		os.RemoveAll(dir)
		return nil, err
	}
	log.Info(msgPluginChildStarted, "pid", cmd.Process.Pid, "socket", c.sock)
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	go c.supervise(cctx, cmd, exited)
	return c, nil
}

// Client reaches the child.
func (c *pluginChild) Client() *render.PluginClient { return c.client }

// pid is the running child's process ID.
func (c *pluginChild) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd.Process.Pid
}

// Stop ends the child and removes its directory.
func (c *pluginChild) Stop() {
	c.cancel()
	<-c.done
	os.RemoveAll(c.dir)
}

func (c *pluginChild) spawn() (*exec.Cmd, chan struct{}, error) {
	cmd := exec.Command(c.exe, "plugin-server", "--listen", "unix://"+c.sock, "--work-dir", filepath.Join(c.dir, "work"))
	setParentDeathSignal(cmd)
	cmd.Env = append(slices.Clone(c.env), "HOME="+filepath.Join(c.dir, "home")) // exec keeps the last HOME
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("plugin server: start %s: %w", c.exe, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c.mu.Lock()
	c.cmd = cmd
	c.mu.Unlock()
	return cmd, exited, nil
}

func (c *pluginChild) waitReady(ctx context.Context, exited chan struct{}) error {
	deadline := time.NewTimer(pluginChildStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.client.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("plugin server: the child exited before it listened (see its log above)")
		case <-deadline.C:
			return fmt.Errorf("plugin server: no answer within %s: %w", pluginChildStartTimeout, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// supervise restarts the child when it dies, with a growing delay, until
// ctx ends, and then stops it.
func (c *pluginChild) supervise(ctx context.Context, cmd *exec.Cmd, exited chan struct{}) {
	defer close(c.done)
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			if cmd != nil {
				stopCmd(cmd, exited)
			}
			return
		case <-exited:
		}
		if cmd != nil {
			c.log.Warn(msgPluginChildExited, "exit", cmd.ProcessState.String(), "after", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
		var err error
		if cmd, exited, err = c.spawn(); err != nil {
			c.log.Error(msgPluginChildExited, "error", err)
			exited = make(chan struct{})
			close(exited)
			cmd = nil
			continue
		}
		if c.waitReady(ctx, exited) == nil {
			backoff = time.Second
		}
	}
}

// stopCmd asks cmd to stop, and kills it if it has not within 10 s.
func stopCmd(cmd *exec.Cmd, exited chan struct{}) {
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}
