package testbed

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// GitServerOptions configures StartGitServer.
type GitServerOptions struct {
	// Username and Password, when Username is set, are required as HTTP
	// basic auth on every request; others get 401 with WWW-Authenticate.
	Username, Password string
	// Authorize, when set, decides on each request's HTTP basic auth
	// instead of Username and Password (tokens that change or expire).
	Authorize func(user, password string) bool
	// TLS, when set, serves HTTPS with it instead of HTTP.
	TLS *tls.Config
}

// GitServer serves the bare repositories under a root directory over the
// smart HTTP protocol (git http-backend through CGI), fetch and push.
type GitServer struct {
	root string
	base string
	srv  *http.Server
	done chan struct{}
}

// StartGitServer serves the bare repositories under root on a free
// 127.0.0.1 port from the calling process, until Close. At most one
// GitServerOptions may be given.
func StartGitServer(root string, opts ...GitServerOptions) (*GitServer, error) {
	if len(opts) > 1 {
		return nil, errors.New("at most one GitServerOptions")
	}
	var o GitServerOptions
	if len(opts) == 1 {
		o = opts[0]
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git not found on PATH: %w", err)
	}
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("find git-http-backend: %w", err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve git root: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("create git root: %w", err)
	}

	var h http.Handler = &cgi.Handler{
		Path: backend,
		Dir:  root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			// Enable receive-pack for every repository, also for ones not
			// made by CreateRepo, and keep the user's git config out.
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + root,
		},
	}
	switch {
	case o.Authorize != nil:
		h = basicAuthFunc(h, o.Authorize)
	case o.Username != "":
		h = basicAuth(h, o.Username, o.Password)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	scheme := "http://"
	if o.TLS != nil {
		ln, scheme = tls.NewListener(ln, o.TLS), "https://"
	}
	s := &GitServer{
		root: root,
		base: scheme + ln.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

func basicAuth(next http.Handler, user, pass string) http.Handler {
	return basicAuthFunc(next, func(u, p string) bool {
		return subtle.ConstantTimeCompare([]byte(u), []byte(user)) == 1 && subtle.ConstantTimeCompare([]byte(p), []byte(pass)) == 1
	})
}

func basicAuthFunc(next http.Handler, allow func(user, password string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || !allow(u, p) {
			w.Header().Set("WWW-Authenticate", `Basic realm="windlass-testbed-git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// URL is the clone URL of the repository at root/repo.
func (s *GitServer) URL(repo string) string {
	return s.base + "/" + strings.TrimPrefix(path.Clean("/"+repo), "/")
}

// CreateRepo creates an empty bare repository root/name with default branch
// main and returns its URL.
func (s *GitServer) CreateRepo(name string) (string, error) {
	clean := path.Clean("/" + name)
	if clean == "/" || name != strings.TrimPrefix(clean, "/") {
		return "", fmt.Errorf("invalid repository name %q", name)
	}
	dir := filepath.Join(s.root, filepath.FromSlash(name))
	if _, err := os.Stat(dir); err == nil {
		return "", fmt.Errorf("repository %q already exists", name)
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=main", dir},
		{"-C", dir, "config", "http.receivepack", "true"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
		}
	}
	return s.URL(name), nil
}

// Close stops the server and waits for running requests.
func (s *GitServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	if err != nil {
		return fmt.Errorf("stop git server: %w", err)
	}
	return nil
}

// WorkRepo is a work tree, made with go-git, whose origin is a remote
// repository; it writes fixture commits and pushes them over HTTP.
type WorkRepo struct {
	Dir  string
	repo *git.Repository
	auth *githttp.BasicAuth
}

const mainBranch = plumbing.ReferenceName("refs/heads/main")

// NewWorkRepo initialises a work tree in dir on branch main with origin
// remoteURL. If the remote already has a main branch, the work tree starts
// from it, so that new commits extend that history. auth may be nil.
func NewWorkRepo(ctx context.Context, dir, remoteURL string, auth *githttp.BasicAuth) (*WorkRepo, error) {
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: mainBranch},
	})
	if err != nil {
		return nil, fmt.Errorf("init work repo: %w", err)
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remoteURL}})
	if err != nil {
		return nil, fmt.Errorf("add origin: %w", err)
	}
	w := &WorkRepo{Dir: dir, repo: repo, auth: auth}
	err = remote.FetchContext(ctx, &git.FetchOptions{
		RefSpecs: []config.RefSpec{"+refs/heads/main:refs/remotes/origin/main"},
		Auth:     w.authMethod(),
	})
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return w, nil
	case err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil, fmt.Errorf("fetch origin: %w", err)
	}
	ref, err := repo.Reference(plumbing.NewRemoteReferenceName("origin", "main"), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return w, nil // the remote has refs, but no main
	}
	if err != nil {
		return nil, fmt.Errorf("resolve origin/main: %w", err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(mainBranch, ref.Hash())); err != nil {
		return nil, fmt.Errorf("set main: %w", err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("open work tree: %w", err)
	}
	if err := wt.Reset(&git.ResetOptions{Commit: ref.Hash(), Mode: git.HardReset}); err != nil {
		return nil, fmt.Errorf("check out origin/main: %w", err)
	}
	return w, nil
}

func (w *WorkRepo) authMethod() transport.AuthMethod {
	if w.auth == nil {
		return nil // a typed nil pointer would make go-git send empty credentials
	}
	return w.auth
}

// WriteFile writes content to the slash-separated path in the work tree,
// creating directories, and stages it.
func (w *WorkRepo) WriteFile(p, content string) error {
	full := filepath.Join(w.Dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", p, err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	wt, err := w.repo.Worktree()
	if err != nil {
		return fmt.Errorf("open work tree: %w", err)
	}
	if _, err := wt.Add(p); err != nil {
		return fmt.Errorf("stage %s: %w", p, err)
	}
	return nil
}

// WriteFiles writes each file (slash-separated path to content) in the
// work tree and stages every change of the tree at once: staging file by
// file rereads the tree each time (10,000 files: over 10 minutes).
func (w *WorkRepo) WriteFiles(files map[string]string) error {
	wt, err := w.repo.Worktree()
	if err != nil {
		return fmt.Errorf("open work tree: %w", err)
	}
	for p, content := range files {
		full := filepath.Join(w.Dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create directory for %s: %w", p, err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return fmt.Errorf("stage %d files: %w", len(files), err)
	}
	return nil
}

// Symlink makes the slash-separated path p a symlink to target in the
// work tree, creating directories, and stages it.
func (w *WorkRepo) Symlink(p, target string) error {
	full := filepath.Join(w.Dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", p, err)
	}
	if err := os.Symlink(target, full); err != nil {
		return fmt.Errorf("symlink %s: %w", p, err)
	}
	wt, err := w.repo.Worktree()
	if err != nil {
		return fmt.Errorf("open work tree: %w", err)
	}
	if _, err := wt.Add(p); err != nil {
		return fmt.Errorf("stage %s: %w", p, err)
	}
	return nil
}

// Submodule stages, at the slash-separated path p, a submodule at
// commit sha (a gitlink), as `git submodule add` followed by a checkout
// of sha would; the caller writes .gitmodules.
func (w *WorkRepo) Submodule(p, sha string) error {
	idx, err := w.repo.Storer.Index()
	if err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	if _, err := idx.Remove(p); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
		return fmt.Errorf("unstage %s: %w", p, err)
	}
	e := idx.Add(p)
	e.Hash, e.Mode = plumbing.NewHash(sha), filemode.Submodule
	if err := w.repo.Storer.SetIndex(idx); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// Remove deletes the slash-separated path from the work tree and stages the
// removal.
func (w *WorkRepo) Remove(p string) error {
	wt, err := w.repo.Worktree()
	if err != nil {
		return fmt.Errorf("open work tree: %w", err)
	}
	if _, err := wt.Remove(p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// CommitAndPush commits everything staged (an empty commit is allowed) and
// pushes branch main to origin. It returns the new commit's SHA.
func (w *WorkRepo) CommitAndPush(ctx context.Context, msg string) (string, error) {
	return w.SignedCommitAndPush(ctx, msg, nil)
}

// SignedCommitAndPush is CommitAndPush with the commit signed by key (a
// private GPG key, see NewGPGKey); nil leaves it unsigned.
func (w *WorkRepo) SignedCommitAndPush(ctx context.Context, msg string, key *openpgp.Entity) (string, error) {
	wt, err := w.repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("open work tree: %w", err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: signature(), AllowEmptyCommits: true, SignKey: key})
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if err := w.push(ctx, config.RefSpec(mainBranch+":"+mainBranch)); err != nil {
		return "", err
	}
	return h.String(), nil
}

// Tag creates the lightweight tag name on HEAD and pushes it to origin.
func (w *WorkRepo) Tag(ctx context.Context, name string) error {
	head, err := w.repo.Head()
	if err != nil {
		return fmt.Errorf("resolve HEAD: %w", err)
	}
	if _, err := w.repo.CreateTag(name, head.Hash(), nil); err != nil {
		return fmt.Errorf("create tag %s: %w", name, err)
	}
	ref := plumbing.NewTagReferenceName(name)
	return w.push(ctx, config.RefSpec(ref+":"+ref))
}

func (w *WorkRepo) push(ctx context.Context, spec config.RefSpec) error {
	err := w.repo.PushContext(ctx, &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{spec},
		Auth:       w.authMethod(),
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("push %s: %w", spec, err)
	}
	return nil
}

// signature is the author and committer of fixture commits.
func signature() *object.Signature {
	return &object.Signature{Name: "windlass-testbed", Email: "testbed@windlass.invalid", When: time.Now()}
}
