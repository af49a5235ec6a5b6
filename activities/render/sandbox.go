package render

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// ErrRenderLimit is a render that broke one of the sandbox's limits, or
// whose sandbox crashed: rendering the same commit again would too.
var ErrRenderLimit = failure.Permanent("RenderLimit", "render exceeded a limit")

// SandboxEnv, set to "1" in a process's environment, makes the windlass
// binary (or a test binary that calls SandboxMain) a render sandbox.
const SandboxEnv = "WINDLASS_SANDBOX_CHILD"

// SandboxLimits bound one render in the sandbox.
type SandboxLimits struct {
	// MemoryBytes bounds the sandbox's data segment (RLIMIT_DATA), and
	// its Go memory limit is set a little below it.
	MemoryBytes int64 `json:"memoryBytes"`
	// CPU bounds the CPU time of one render (RLIMIT_CPU, renewed for
	// each render).
	CPU time.Duration `json:"cpu"`
	// Wall bounds one render's wall time (the worker kills the sandbox).
	Wall time.Duration `json:"wall"`
	// StackBytes bounds a goroutine's stack (debug.SetMaxStack).
	StackBytes int `json:"stackBytes"`
	// OutputBytes bounds the rendered manifests, as JSON.
	OutputBytes int64 `json:"outputBytes"`
}

// DefaultSandboxLimits are the limits of a worker that sets none.
var DefaultSandboxLimits = SandboxLimits{MemoryBytes: 1 << 30, CPU: 60 * time.Second, Wall: 90 * time.Second,
	StackBytes: 64 << 20, OutputBytes: 64 << 20}

// sandboxIdle is how long an idle sandbox process is kept for the next
// render, and maxIdleSandboxes how many are kept.
const (
	sandboxIdle      = time.Minute
	maxIdleSandboxes = 2
)

// Sandbox renders in child processes of the worker's binary, so that a
// tool that crashes (a Go stack overflow cannot be recovered) or grows
// without bound takes down the render, not the worker. A child serves one
// render at a time and is reused while it lives; at most slots children
// render at once, and other renders wait for one.
type Sandbox struct {
	exe    string
	limits SandboxLimits
	log    *slog.Logger
	slots  chan struct{}

	mu   sync.Mutex
	idle []*sandboxProc
}

// sandboxSlots bounds the sandboxes rendering at once: each may take its
// memory limit.
var sandboxSlots = max(2, runtime.NumCPU())

// NewSandbox runs renders with exe (the worker's own binary, which must
// call SandboxMain when SandboxEnv is set) under limits.
func NewSandbox(exe string, limits SandboxLimits, log *slog.Logger) (*Sandbox, error) {
	if exe == "" {
		return nil, errors.New("render sandbox: no executable")
	}
	if limits.MemoryBytes <= 0 || limits.CPU <= 0 || limits.Wall <= 0 || limits.StackBytes <= 0 || limits.OutputBytes <= 0 {
		return nil, fmt.Errorf("render sandbox: every limit must be positive: %+v", limits)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Sandbox{exe: exe, limits: limits, log: log, slots: make(chan struct{}, sandboxSlots)}, nil
}

// Close stops the idle sandbox processes.
func (s *Sandbox) Close() {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, p := range idle {
		p.stop()
	}
}

// sandboxRequest is one render for the sandbox: the request, with the
// checkouts the worker made for it.
type sandboxRequest struct {
	Request  Request           `json:"request"`
	Roots    map[string]string `json:"roots"` // rootKey(repo, sha) → checkout
	CacheDir string            `json:"cacheDir"`
	Plugins  []PluginConfig    `json:"plugins,omitempty"`
	// PluginServer is the address of the worker's plugin server.
	PluginServer string        `json:"pluginServer,omitempty"`
	Limits       SandboxLimits `json:"limits"`
	// MaxFileBytes and NetTimeout are the worker's Config's.
	MaxFileBytes int64         `json:"maxFileBytes,omitempty"`
	NetTimeout   time.Duration `json:"netTimeout,omitempty"`
	// Kustomize are the worker's kustomize build options.
	Kustomize KustomizeOptions `json:"kustomize,omitzero"`
}

// sandboxResponse is the sandbox's answer: the manifests as JSON, or the
// error with its failure type.
type sandboxResponse struct {
	Manifests json.RawMessage `json:"manifests,omitempty"`
	Count     int             `json:"count"`
	Shared    bool            `json:"shared"`
	Error     string          `json:"error,omitempty"`
	ErrorType string          `json:"errorType,omitempty"`
	// Rendered are the sandbox's render timings, for the worker's metrics.
	Rendered []renderTiming `json:"rendered,omitempty"`
}

// renderTiming is one source rendered by tool, in d.
type renderTiming struct {
	Tool string        `json:"tool"`
	D    time.Duration `json:"d"`
}

// timings records a sandbox's render timings; it serves no cache.
type timings []renderTiming

func (t *timings) CacheRequest(bool)                     {}
func (t *timings) Rendered(tool string, d time.Duration) { *t = append(*t, renderTiming{tool, d}) }

func rootKey(repo, sha string) string { return repo + "@" + sha }

// render checks out req's Git sources here and renders them in a sandbox.
func (s *Sandbox) render(ctx context.Context, r *Renderer, req Request) ([]*unstructured.Unstructured, []byte, bool, error) {
	roots := map[string]string{}
	for _, src := range req.Sources {
		if src.Chart != "" {
			// The sandbox holds no credentials: the worker downloads a
			// chart from a repository and its dependencies into the
			// shared chart cache first.
			if r.creds != nil {
				if _, err := r.loadRepoChart(ctx, src.RepoURL, src.Chart, src.SHA); err != nil {
					return nil, nil, false, err
				}
			}
			continue
		}
		root, err := r.checkout(ctx, req, src.RepoURL, src.SHA)
		if err != nil {
			return nil, nil, false, fmt.Errorf("render %s@%s: %w", src.Path, src.SHA, err)
		}
		roots[rootKey(src.RepoURL, src.SHA)] = root
	}
	sreq := sandboxRequest{Request: req, Roots: roots, CacheDir: r.cacheDir, Plugins: r.plugins, Limits: s.limits,
		MaxFileBytes: r.maxFile, NetTimeout: r.netTimeout, Kustomize: r.kustomize}
	if r.pluginServer != nil {
		sreq.PluginServer = r.pluginServer.Address()
	}
	resp, err := s.run(ctx, sreq)
	if err != nil {
		return nil, nil, false, err
	}
	if r.metrics != nil {
		for _, t := range resp.Rendered {
			r.metrics.Rendered(t.Tool, t.D)
		}
	}
	if resp.Error != "" {
		return nil, nil, false, sandboxError(resp.Error, resp.ErrorType)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(resp.Manifests, &raw); err != nil {
		return nil, nil, false, fmt.Errorf("render sandbox: %w", err)
	}
	objs := make([]*unstructured.Unstructured, len(raw))
	for i := range raw {
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(raw[i]); err != nil {
			return nil, nil, false, fmt.Errorf("render sandbox: %w", err)
		}
	}
	return objs, resp.Manifests, resp.Shared, nil
}

// knownErrors are the sentinels a sandbox's error may name by type; the
// worker gives them back, so that errors.Is holds across the process.
var knownErrors = []*failure.Sentinel{ErrPathNotFound, ErrBadPath, ErrChart, ErrHelmValues, ErrChartNotFound, ErrChartRepo,
	ErrJsonnet, ErrKustomize, ErrRemoteBase, ErrPluginNotConfigured, ErrPluginOutput, ErrCheckoutTooLarge, ErrRenderLimit, ErrFileTooLarge}

// sandboxError is a sandbox's error message with its failure type.
func sandboxError(msg, typ string) error {
	if typ == "" {
		return errors.New(msg)
	}
	for _, k := range knownErrors {
		if k.Type() == typ {
			return &remoteError{msg: msg, err: k}
		}
	}
	if typ == failure.TypeOf(manifest.ErrInvalidManifest) {
		return &remoteError{msg: msg, err: manifest.ErrInvalidManifest}
	}
	return &remoteError{msg: msg, err: failure.Permanent(typ, msg)}
}

// remoteError is an error of the sandbox: its message, and the sentinel
// of its type.
type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// run sends req to an idle or new sandbox process and reads its answer.
// A process that breaks a limit or dies is not reused.
func (s *Sandbox) run(ctx context.Context, req sandboxRequest) (sandboxResponse, error) {
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return sandboxResponse{}, ctx.Err()
	}
	p, err := s.get()
	if err != nil {
		return sandboxResponse{}, err
	}
	wall, cancel := context.WithTimeout(ctx, s.limits.Wall)
	defer cancel()
	type result struct {
		resp sandboxResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := p.roundTrip(req, s.limits.OutputBytes)
		done <- result{resp, err}
	}()
	tick := time.NewTicker(sandboxHeartbeat)
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			if res.err != nil {
				return sandboxResponse{}, p.died(res.err, s.limits)
			}
			s.put(p)
			return res.resp, nil
		case <-tick.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx) // a long render is not a lost worker
			}
		case <-wall.Done():
			p.stop()
			<-done
			if ctx.Err() != nil {
				return sandboxResponse{}, ctx.Err()
			}
			return sandboxResponse{}, fmt.Errorf("%w: render took longer than its wall-time limit of %s", ErrRenderLimit, s.limits.Wall)
		}
	}
}

// sandboxHeartbeat is how often a render heartbeats while it waits for its
// sandbox.
const sandboxHeartbeat = 10 * time.Second

func (s *Sandbox) get() (*sandboxProc, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		p := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		if p.idle != nil {
			p.idle.Stop()
		}
		return p, nil
	}
	s.mu.Unlock()
	return startSandbox(s.exe)
}

// put keeps p for the next render, and stops it when it stays idle.
func (s *Sandbox) put(p *sandboxProc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.idle) >= maxIdleSandboxes {
		go p.stop()
		return
	}
	s.idle = append(s.idle, p)
	p.idle = time.AfterFunc(sandboxIdle, func() {
		s.mu.Lock()
		i := -1
		for j, q := range s.idle {
			if q == p {
				i = j
			}
		}
		if i >= 0 {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
		}
		s.mu.Unlock()
		if i >= 0 {
			p.stop()
		}
	})
}

// sandboxProc is one sandbox process.
type sandboxProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *headTail
	idle   *time.Timer
	waited chan struct{}
}

func startSandbox(exe string) (*sandboxProc, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(sandboxEnviron(os.Environ()), SandboxEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("render sandbox: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("render sandbox: %w", err)
	}
	p := &sandboxProc{cmd: cmd, in: in, out: bufio.NewReader(out), stderr: &headTail{max: 8 << 10}, waited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("render sandbox: start %s: %w", exe, err)
	}
	go func() { _ = cmd.Wait(); close(p.waited) }()
	return p, nil
}

// sandboxKeep are the variables a sandbox inherits: none of the worker's
// settings or credentials, only what tools and chart downloads need.
var sandboxKeep = []string{"PATH", "HOME", "TMPDIR", "USER", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "ALL_PROXY", "all_proxy"}

func sandboxEnviron(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(sandboxKeep, name) {
			out = append(out, kv)
		}
	}
	return out
}

// roundTrip writes one request frame and reads one response frame.
func (p *sandboxProc) roundTrip(req sandboxRequest, maxOut int64) (sandboxResponse, error) {
	if err := writeFrame(p.in, req); err != nil {
		return sandboxResponse{}, err
	}
	var resp sandboxResponse
	if err := readFrame(p.out, maxOut+(1<<20), &resp); err != nil {
		return sandboxResponse{}, err
	}
	return resp, nil
}

func (p *sandboxProc) stop() {
	_ = p.cmd.Process.Kill()
	<-p.waited
}

// died names what ended a sandbox process that broke off a render.
func (p *sandboxProc) died(err error, l SandboxLimits) error {
	var big *frameTooLarge
	if errors.As(err, &big) {
		p.stop()
		return fmt.Errorf("%w: the rendered manifests are larger than the output limit of %s", ErrRenderLimit, bytesText(l.OutputBytes))
	}
	select {
	case <-p.waited:
	case <-time.After(5 * time.Second):
		p.stop()
	}
	tail := p.stderr.String()
	code := p.cmd.ProcessState.ExitCode()
	switch {
	case strings.Contains(tail, "stack exceeds") || strings.Contains(tail, "stack overflow"):
		return fmt.Errorf("%w: render exceeded its stack limit of %s (an endless recursion?)", ErrRenderLimit, bytesText(int64(l.StackBytes)))
	case strings.Contains(tail, "out of memory") || strings.Contains(tail, "cannot allocate memory") || peakRSS(p.cmd.ProcessState) >= l.MemoryBytes/2:
		// Where a failed allocation leaves the Go runtime, it may also
		// die of a fault: a process that grew past half its limit is
		// taken to have run out.
		return fmt.Errorf("%w: render exceeded its memory limit of %s", ErrRenderLimit, bytesText(l.MemoryBytes))
	case code == sandboxCPUExit:
		return fmt.Errorf("%w: render exceeded its CPU-time limit of %s", ErrRenderLimit, l.CPU)
	}
	last := strings.TrimSpace(tail)
	if i := strings.Index(last, "\n"); i >= 0 {
		last = last[:i] // the first line: the runtime's reason
	}
	err = fmt.Errorf("%w: the render sandbox ended (exit %d): %s", ErrRenderLimit, code, last)
	if code < 0 {
		return &sandboxKilled{err}
	}
	return err
}

// sandboxKilled is a sandbox that a signal ended, which the worker did not
// send for a limit: perhaps not the render's doing (the worker's process
// group stopping, the host's OOM killer), so it is not remembered.
type sandboxKilled struct{ err error }

func (e *sandboxKilled) Error() string { return e.err.Error() }
func (e *sandboxKilled) Unwrap() error { return e.err }

func bytesText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// headTail keeps the first and the last bytes written to it: a Go
// runtime crash names its reason first.
type headTail struct {
	mu   sync.Mutex
	max  int
	head []byte
	tail []byte
}

func (b *headTail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.head); room > 0 {
		b.head = append(b.head, p[:min(room, len(p))]...)
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > b.max {
		b.tail = b.tail[len(b.tail)-b.max:]
	}
	return len(p), nil
}

func (b *headTail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.head) + "\n" + string(b.tail)
}

// frameTooLarge is a frame over the reader's limit.
type frameTooLarge struct{ n uint64 }

func (e *frameTooLarge) Error() string { return fmt.Sprintf("frame of %d bytes", e.n) }

// writeFrame writes v as JSON after its length (8 bytes, big-endian).
func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// readFrame reads one frame of at most limit bytes into v.
func readFrame(r io.Reader, limit int64, v any) error {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint64(n[:])
	if size > uint64(limit) {
		return &frameTooLarge{n: size}
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
