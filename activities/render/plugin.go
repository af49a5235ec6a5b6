package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Plugin errors that retrying cannot fix. A plugin that exits with an
// error or times out is retryable: it may depend on the network.
var (
	ErrPluginNotConfigured = failure.Permanent("PluginNotConfigured", "config-management plugin not configured")
	ErrPluginOutput        = failure.Permanent("PluginOutputTooLarge", "plugin output too large")
	// ErrCheckoutTooLarge is a checkout larger than the plugin server takes.
	ErrCheckoutTooLarge = failure.Permanent("PluginCheckoutTooLarge", "checkout too large for the plugin server")
)

// Plugin defaults, as in Argo CD.
const (
	DefaultPluginTimeout        = 90 * time.Second
	DefaultPluginMaxOutputBytes = 8 << 20
	// stderrTail is how much of a failed command's stderr the error keeps.
	stderrTail = 4 << 10
	// maxFindEntries bounds the walk of a discovery find.glob.
	maxFindEntries = 100000
)

// PluginConfig configures a config-management plugin in the shape of Argo
// CD's ConfigManagementPlugin spec (plugin.yaml), run by the plugin server
// (Config.PluginServer) or, without one, by the render itself. Load it
// with sigs.k8s.io/yaml (JSON tags).
type PluginConfig struct {
	Name string `json:"name"`
	// Discover says which directories the plugin renders when a source
	// does not name it; a plugin without rules is used only by name.
	Discover PluginDiscover `json:"discover,omitempty"`
	// Init runs before Generate, in the same directory (optional).
	Init PluginCommand `json:"init,omitempty"`
	// Generate prints the manifests (YAML or JSON) on stdout.
	Generate PluginCommand `json:"generate"`
	// Timeout bounds each command, e.g. "90s" (default 90 s); the whole
	// process group is killed when it runs out.
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// MaxOutputBytes bounds what Generate may print (default 8 MiB).
	MaxOutputBytes int64 `json:"maxOutputBytes,omitempty"`
}

// PluginCommand is a command and its arguments (Argo CD's Command).
type PluginCommand struct {
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

func (c PluginCommand) argv() []string { return append(append([]string{}, c.Command...), c.Args...) }

// PluginDiscover holds the discovery rules; any one that matches is
// enough.
type PluginDiscover struct {
	// FileName is a glob relative to the app directory (filepath.Glob).
	FileName string     `json:"fileName,omitempty"`
	Find     PluginFind `json:"find,omitempty"`
}

// PluginFind matches with a glob that may hold ** (Glob), or with a
// command that exits 0 and prints something (Command, run in the app
// directory; it must not write there).
type PluginFind struct {
	Glob    string   `json:"glob,omitempty"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

func (p PluginConfig) timeout() time.Duration {
	if p.Timeout.Duration > 0 {
		return p.Timeout.Duration
	}
	return DefaultPluginTimeout
}

func (p PluginConfig) maxOutput() int64 {
	if p.MaxOutputBytes > 0 {
		return p.MaxOutputBytes
	}
	return DefaultPluginMaxOutputBytes
}

// ValidatePlugins checks plugin configurations when the worker starts.
func ValidatePlugins(plugins []PluginConfig) error {
	seen := map[string]bool{}
	var errs []error
	for i, p := range plugins {
		switch {
		case p.Name == "":
			errs = append(errs, fmt.Errorf("plugin %d: name is required", i))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("plugin %q: configured twice", p.Name))
		case len(p.Generate.Command) == 0:
			errs = append(errs, fmt.Errorf("plugin %q: generate.command is required", p.Name))
		case p.Timeout.Duration < 0 || p.MaxOutputBytes < 0:
			errs = append(errs, fmt.Errorf("plugin %q: timeout and maxOutputBytes must not be negative", p.Name))
		}
		if p.Discover.Find.Glob != "" {
			if _, err := globRegexp(p.Discover.Find.Glob); err != nil {
				errs = append(errs, fmt.Errorf("plugin %q: discover.find.glob: %w", p.Name, err))
			}
		}
		seen[p.Name] = true
	}
	return errors.Join(errs...)
}

// pluginSet is the configured plugins, in the order discovery tries them.
type pluginSet []PluginConfig

// discover returns the first plugin whose discovery rule matches dir;
// commands runs find commands too (false: they never match).
func (s pluginSet) discover(dir string, commands bool) (PluginConfig, bool) {
	for _, p := range s {
		if p.discovers(dir, commands) {
			return p, true
		}
	}
	return PluginConfig{}, false
}

// hasFindCommand reports whether any plugin is discovered by a command.
func (s pluginSet) hasFindCommand() bool {
	return slices.ContainsFunc(s, func(p PluginConfig) bool { return len(p.Discover.Find.Command) > 0 })
}

// discoverPlugin returns the first configured plugin whose discovery rule
// matches dir. With a plugin server, the server runs the find commands;
// when it fails, so does the render, rather than take the source for
// another tool's.
func (r *Renderer) discoverPlugin(ctx context.Context, root, dir string) (PluginConfig, bool, error) {
	set := pluginSet(r.plugins)
	if r.pluginServer == nil || !set.hasFindCommand() {
		p, ok := set.discover(dir, true)
		return p, ok, nil
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return PluginConfig{}, false, err
	}
	res, err := r.pluginServer.run(ctx, pluginJob{Op: pluginOpDiscover, Plugins: r.plugins, Dir: filepath.ToSlash(rel)}, root)
	if err != nil {
		return PluginConfig{}, false, fmt.Errorf("plugin discovery: %w", err)
	}
	for _, p := range r.plugins {
		if p.Name == res.Plugin {
			return p, true, nil
		}
	}
	return PluginConfig{}, false, nil
}

func (p PluginConfig) discovers(dir string, commands bool) bool {
	d := p.Discover
	if d.FileName != "" {
		if m, _ := filepath.Glob(filepath.Join(dir, d.FileName)); len(m) > 0 {
			return true
		}
	}
	if d.Find.Glob != "" && globFinds(dir, d.Find.Glob) {
		return true
	}
	if commands && len(d.Find.Command) > 0 {
		home, err := os.MkdirTemp("", "windlass-plugin-home-")
		if err != nil {
			return false
		}
		defer os.RemoveAll(home)
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout())
		defer cancel()
		cmd := PluginCommand{Command: d.Find.Command, Args: d.Find.Args}
		out, err := runCommand(ctx, cmd.argv(), dir, baseEnviron(home), 1<<20)
		return err == nil && len(bytes.TrimSpace(out)) > 0
	}
	return false
}

// globFinds reports whether a file under dir matches glob (which may use
// ** for any number of directories).
func globFinds(dir, glob string) bool {
	re, err := globRegexp(glob)
	if err != nil {
		return false
	}
	n, found := 0, false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if n++; err != nil || n > maxFindEntries {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(dir, p)
		if re.MatchString(filepath.ToSlash(rel)) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// globRegexp translates a glob with *, ?, [...] and ** into a regexp on
// slash paths.
func globRegexp(glob string) (*regexp.Regexp, error) {
	g := strings.TrimPrefix(filepath.ToSlash(glob), "./")
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(g[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ in %q", glob)
			}
			class := g[i+1 : i+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += end
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// renderPlugin runs a plugin's init and generate commands, on the plugin
// server when the Renderer has one, else here (runPluginJob), and parses
// what generate prints.
func (r *Renderer) renderPlugin(ctx context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	spec := appspec.Plugin{}
	if in.Source.Plugin != nil {
		spec = *in.Source.Plugin
	}
	root, appRel, err := checkoutPaths(in)
	if err != nil {
		return nil, err
	}
	job := pluginJob{Op: pluginOpGenerate, Plugins: r.plugins, Spec: spec, Build: newBuildEnv(in), Dir: filepath.ToSlash(appRel)}
	var res pluginResult
	if r.pluginServer != nil {
		res, err = r.pluginServer.run(ctx, job, root)
	} else {
		res, err = r.runPluginCopy(ctx, job, root)
	}
	if err != nil {
		return nil, err
	}
	return parseStream("plugin "+res.Plugin+" output", res.Output)
}

// runPluginCopy runs job in a private copy of the checkout root (so that a
// plugin cannot change the shared one).
func (r *Renderer) runPluginCopy(ctx context.Context, job pluginJob, root string) (pluginResult, error) {
	base := r.cacheDir
	if base == "" {
		base = os.TempDir()
	}
	work, err := os.MkdirTemp(base, "plugin-")
	if err != nil {
		return pluginResult{}, fmt.Errorf("plugin: scratch dir: %w", err)
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "repo")
	if err := copyTree(root, repo); err != nil {
		return pluginResult{}, fmt.Errorf("plugin: copy checkout: %w", err)
	}
	return runPluginJob(ctx, r.log, job, work)
}

// pluginJob is one plugin run: what the worker sends the plugin server.
type pluginJob struct {
	Op      string         `json:"op"`
	Plugins []PluginConfig `json:"plugins"`
	Spec    appspec.Plugin `json:"spec"`
	// Build is the build environment (ARGOCD_APP_*).
	Build buildEnv `json:"build,omitempty"`
	// Dir is the app's directory in the checkout, slash-separated.
	Dir string `json:"dir"`
}

// Plugin job operations.
const (
	pluginOpGenerate = "generate"
	pluginOpDiscover = "discover"
)

// pluginResult is a plugin run's answer: the plugin chosen and what its
// generate printed.
type pluginResult struct {
	Plugin string `json:"plugin,omitempty"`
	Output []byte `json:"output,omitempty"`
}

// runPluginJob runs job on the checkout in work/repo, which it may
// change, with work/home as the plugin's HOME.
func runPluginJob(ctx context.Context, log *slog.Logger, job pluginJob, work string) (pluginResult, error) {
	repo, home := filepath.Join(work, "repo"), filepath.Join(work, "home")
	rel := filepath.FromSlash(job.Dir)
	if !filepath.IsLocal(rel) && rel != "." {
		return pluginResult{}, fmt.Errorf("%w: %q is outside the repository", ErrBadPath, job.Dir)
	}
	cwd := filepath.Join(repo, rel)
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return pluginResult{}, fmt.Errorf("%w: %s", ErrPathNotFound, job.Dir)
	}
	set := pluginSet(job.Plugins)
	if job.Op == pluginOpDiscover {
		p, _ := set.discover(cwd, true)
		return pluginResult{Plugin: p.Name}, nil
	}
	p, err := set.pick(job.Spec.Name, cwd)
	if err != nil {
		return pluginResult{}, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return pluginResult{}, err
	}
	env, err := pluginEnviron(job.Build, job.Spec, home)
	if err != nil {
		return pluginResult{}, err
	}
	if len(p.Init.Command) > 0 {
		if _, err := runStep(ctx, log, p, "init", p.Init, cwd, env); err != nil {
			return pluginResult{}, err
		}
	}
	out, err := runStep(ctx, log, p, "generate", p.Generate, cwd, env)
	if err != nil {
		return pluginResult{}, err
	}
	return pluginResult{Plugin: p.Name, Output: out}, nil
}

// pick finds the plugin a source names, or the one that discovers dir.
func (s pluginSet) pick(name, dir string) (PluginConfig, error) {
	if name == "" {
		if p, ok := s.discover(dir, true); ok {
			return p, nil
		}
		return PluginConfig{}, fmt.Errorf("%w: no configured plugin's discovery rule matches the source (name one in source.plugin.name)", ErrPluginNotConfigured)
	}
	names := make([]string, 0, len(s))
	for _, p := range s {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return PluginConfig{}, fmt.Errorf("%w: plugin %q is not configured on this worker (configured: %s)", ErrPluginNotConfigured, name, strings.Join(names, ", "))
}

const msgPluginRun = "plugin command finished"

func runStep(ctx context.Context, log *slog.Logger, p PluginConfig, step string, c PluginCommand, cwd string, env []string) ([]byte, error) {
	limit := p.maxOutput()
	if step == "init" {
		limit = -1 // init's stdout is discarded
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	start := time.Now()
	out, err := runCommand(ctx, c.argv(), cwd, env, limit)
	log.Debug(msgPluginRun, "plugin", p.Name, "step", step, "duration", time.Since(start), "bytes", len(out))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil, fmt.Errorf("plugin %s %s: timed out after %s: %w", p.Name, step, p.timeout(), err)
		}
		return nil, fmt.Errorf("plugin %s %s: %w", p.Name, step, err)
	}
	return out, nil
}

// runCommand runs argv in its own process group, which is killed when ctx
// ends or stdout passes limit bytes (limit < 0 discards stdout). The
// error of a failed command ends with the tail of its stderr.
func runCommand(ctx context.Context, argv []string, dir string, env []string, limit int64) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 2 * time.Second
	setProcessGroup(cmd)
	stdout := &limitedBuffer{max: limit, stop: stop}
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	killProcessGroup(cmd) // stragglers left in the background
	switch {
	case stdout.exceeded:
		return nil, fmt.Errorf("%w: more than %d bytes on stdout", ErrPluginOutput, limit)
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("%w%s", context.Cause(ctx), stderr.suffix())
	case err != nil:
		return nil, fmt.Errorf("%w%s", err, stderr.suffix())
	}
	return stdout.buf.Bytes(), nil
}

var errOutputLimit = errors.New("output limit reached")

// limitedBuffer keeps up to max bytes and stops the command beyond.
type limitedBuffer struct {
	buf      bytes.Buffer
	max      int64
	exceeded bool
	stop     context.CancelCauseFunc
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.max < 0 {
		return len(p), nil
	}
	if int64(l.buf.Len())+int64(len(p)) > l.max {
		l.exceeded = true
		l.stop(errOutputLimit)
		return 0, errOutputLimit
	}
	return l.buf.Write(p)
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) suffix() string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.b), "?"))
	if s == "" {
		return ""
	}
	return ": stderr: " + s
}

// baseEnviron is the environment every plugin command starts from: the
// worker's PATH and a private HOME, nothing else of the worker's.
func baseEnviron(home string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{"PATH=" + path, "HOME=" + home}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
var paramUnsafe = regexp.MustCompile(`[^A-Z0-9_]`)

// pluginEnviron is what Argo CD gives a plugin: the build environment
// (ARGOCD_APP_*), the source's env entries as ARGOCD_ENV_<NAME> (values
// expanded from the build environment), and its parameters as
// ARGOCD_APP_PARAMETERS (JSON) and PARAM_<NAME>[_<KEY>|_<INDEX>].
func pluginEnviron(build buildEnv, spec appspec.Plugin, home string) ([]string, error) {
	env := append(baseEnviron(home), build.environ()...)
	for _, e := range spec.Env {
		if !envName.MatchString(e.Name) {
			return nil, fmt.Errorf("%w: plugin env name %q is not a valid variable name", ErrBadPath, e.Name)
		}
		env = append(env, "ARGOCD_ENV_"+e.Name+"="+build.subst(e.Value))
	}
	params, err := json.Marshal(spec.Parameters)
	if err != nil {
		return nil, fmt.Errorf("plugin parameters: %w", err)
	}
	env = append(env, "ARGOCD_APP_PARAMETERS="+string(params))
	escape := func(s string) string { return paramUnsafe.ReplaceAllString(strings.ToUpper(s), "_") }
	for _, p := range spec.Parameters {
		base := "PARAM_" + escape(p.Name)
		if p.String != nil {
			env = append(env, base+"="+*p.String)
		}
		for _, k := range sortedKeys(p.Map) {
			env = append(env, base+"_"+escape(k)+"="+p.Map[k])
		}
		for i, v := range p.Array {
			env = append(env, fmt.Sprintf("%s_%d=%s", base, i, v))
		}
	}
	return env, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// copyTree copies the checkout src to dst: directories, regular files
// (with their mode) and symlinks that stay inside src (made relative, so
// that they point into the copy). A symlink out of src fails the copy.
func copyTree(src, dst string) error {
	repo, err := openRepoRoot(src, 0)
	if err != nil {
		return err
	}
	defer repo.Close()
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			if _, err := repo.stat(filepath.ToSlash(rel)); errors.Is(err, errLeaves) {
				return fmt.Errorf("%w: symlink %s leads out of the repository", ErrBadPath, filepath.ToSlash(rel))
			}
			real := realPath(p)
			link, err := filepath.Rel(filepath.Dir(p), real)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil // sockets, devices, pipes
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// parseStream parses a plugin's output; beyond manifest.MaxFileBytes it
// is parsed one document at a time.
func parseStream(name string, b []byte) ([]*unstructured.Unstructured, error) {
	if len(b) <= manifest.MaxFileBytes {
		return manifest.Parse(name, b)
	}
	reader := manifest.NewYAMLReader(b)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: document %d: %w", manifest.ErrInvalidManifest, name, doc, err)
		}
		objs, err := manifest.Parse(fmt.Sprintf("%s (document %d)", name, doc), raw)
		if err != nil {
			return nil, err
		}
		if out, err = addObjects(out, objs); err != nil {
			return nil, err
		}
	}
}
