package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/windlass-cd/windlass/internal/failure"
)

// Plugin server defaults and wire paths.
const (
	DefaultPluginCheckoutBytes = 1 << 30
	DefaultPluginCheckoutFiles = 200000
	DefaultPluginConcurrency   = 4
	// PluginRunPath takes a job frame followed by a checkout tar.
	PluginRunPath    = "/v1/run"
	PluginHealthPath = "/healthz"
	// maxJobBytes bounds the job frame (plugins, parameters, env).
	maxJobBytes = 4 << 20
)

// PluginServerConfig configures a PluginServer.
type PluginServerConfig struct {
	// WorkDir holds one scratch directory per run (default os.TempDir()).
	WorkDir string
	// MaxCheckoutBytes and MaxCheckoutFiles bound the checkout a worker
	// streams (0: the defaults).
	MaxCheckoutBytes int64
	MaxCheckoutFiles int
	// Concurrency bounds the runs at once; others wait (0: the default).
	Concurrency int
	Logger      *slog.Logger
}

// PluginServer runs config-management plugins for workers, in a process
// that holds no cluster credentials: each request carries the plugin
// configuration and a tar of the checkout, unpacked into a scratch
// directory that the plugin may change and that is removed afterwards.
type PluginServer struct {
	cfg   PluginServerConfig
	slots chan struct{}
}

// NewPluginServer checks cfg and fills in its defaults.
func NewPluginServer(cfg PluginServerConfig) (*PluginServer, error) {
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	if st, err := os.Stat(cfg.WorkDir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("plugin server: work dir %s is not a directory", cfg.WorkDir)
	}
	if cfg.MaxCheckoutBytes < 0 || cfg.MaxCheckoutFiles < 0 || cfg.Concurrency < 0 {
		return nil, errors.New("plugin server: limits must not be negative")
	}
	if cfg.MaxCheckoutBytes == 0 {
		cfg.MaxCheckoutBytes = DefaultPluginCheckoutBytes
	}
	if cfg.MaxCheckoutFiles == 0 {
		cfg.MaxCheckoutFiles = DefaultPluginCheckoutFiles
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultPluginConcurrency
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &PluginServer{cfg: cfg, slots: make(chan struct{}, cfg.Concurrency)}, nil
}

// Handler serves PluginRunPath and PluginHealthPath.
func (s *PluginServer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PluginRunPath, s.serveRun)
	mux.HandleFunc("GET "+PluginHealthPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

// pluginResponse is the answer to a run: the result, or the error with
// its failure type (as the render sandbox answers).
type pluginResponse struct {
	pluginResult
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
}

const msgPluginServed = "plugin run"

func (s *PluginServer) serveRun(w http.ResponseWriter, r *http.Request) {
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-r.Context().Done():
		return
	}
	start := time.Now()
	var job pluginJob
	res, err := s.run(r, &job)
	s.cfg.Logger.Info(msgPluginServed, "op", job.Op, "plugin", res.Plugin, "dir", job.Dir, "bytes", len(res.Output),
		"duration", time.Since(start), "error", err)
	resp, code := pluginResponse{pluginResult: res}, http.StatusOK
	if err != nil {
		err = capError(err)
		resp, code = pluginResponse{Error: err.Error(), ErrorType: failure.TypeOf(err)}, http.StatusInternalServerError
		if resp.ErrorType != "" {
			code = http.StatusUnprocessableEntity
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(resp)
}

// run reads the job and the checkout, and runs the job.
func (s *PluginServer) run(r *http.Request, job *pluginJob) (pluginResult, error) {
	if err := readFrame(r.Body, maxJobBytes, job); err != nil {
		return pluginResult{}, fmt.Errorf("%w: plugin job: %w", ErrBadPath, err)
	}
	if job.Op != pluginOpGenerate && job.Op != pluginOpDiscover {
		return pluginResult{}, fmt.Errorf("%w: unknown plugin job %q", ErrBadPath, job.Op)
	}
	if err := ValidatePlugins(job.Plugins); err != nil {
		return pluginResult{}, fmt.Errorf("%w: %w", ErrPluginNotConfigured, err)
	}
	work, err := os.MkdirTemp(s.cfg.WorkDir, "plugin-")
	if err != nil {
		return pluginResult{}, fmt.Errorf("plugin server: scratch dir: %w", err)
	}
	defer removeAll(work)
	repo := filepath.Join(work, "repo")
	if err := os.Mkdir(repo, 0o700); err != nil {
		return pluginResult{}, err
	}
	if err := extractCheckoutTar(r.Body, repo, tarLimits{Bytes: s.cfg.MaxCheckoutBytes, Entries: s.cfg.MaxCheckoutFiles}); err != nil {
		return pluginResult{}, hidePaths(err, work)
	}
	res, err := runPluginJob(r.Context(), s.cfg.Logger, *job, work)
	return res, hidePaths(err, work)
}

// removeAll removes dir even where a plugin took away write permission.
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
