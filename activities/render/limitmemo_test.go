package render

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestLimitMemory runs sandboxed renders against the test bed's Redis: a
// render that broke a limit is answered again, without a render, until a
// hard render tries again; another error, another commit and a raised
// limit render; with Redis down every request renders as before.
func TestLimitMemory(t *testing.T) {
	const (
		big    = "big"    // over the output limit of 1 KiB
		small  = "small"  // within it
		broken = "broken" // not YAML
	)
	files := map[string]string{
		big:    cm("big") + "data: {x: " + strings.Repeat("x", 2000) + "}\n",
		small:  cm("small"),
		broken: "kind: [\n",
	}
	type step struct {
		file   string
		commit string // "a" or "b"
		hard   bool
		output int64 // the output limit (0: 1 KiB)
		// want is "ok", "limit" (a limit error, rendered), "remembered"
		// (the last limit error of this commit and limit, not rendered)
		// or "error" (another error).
		want string
		// renders counts the renders so far (one checkout each).
		renders int
	}
	tests := []struct {
		name      string
		redisDown bool
		steps     []step
	}{
		{name: "a limit break is remembered", steps: []step{
			{file: big, commit: "a", want: "limit", renders: 1},
			{file: big, commit: "a", want: "remembered", renders: 1},
			{file: big, commit: "a", want: "remembered", renders: 1},
		}},
		{name: "a hard render tries again and replaces it", steps: []step{
			{file: big, commit: "a", want: "limit", renders: 1},
			{file: big, commit: "a", hard: true, want: "limit", renders: 2},
			{file: big, commit: "a", want: "remembered", renders: 2},
		}},
		{name: "manifests of a hard render that succeeds stand", steps: []step{
			{file: big, commit: "a", want: "limit", renders: 1},
			{file: small, commit: "a", hard: true, want: "ok", renders: 2},
			{file: small, commit: "a", want: "ok", renders: 2},
		}},
		{name: "another error is not remembered", steps: []step{
			{file: broken, commit: "a", want: "error", renders: 1},
			{file: broken, commit: "a", want: "error", renders: 2},
		}},
		{name: "another commit renders", steps: []step{
			{file: big, commit: "a", want: "limit", renders: 1},
			{file: big, commit: "b", want: "limit", renders: 2},
			{file: big, commit: "a", want: "remembered", renders: 2},
		}},
		{name: "a raised limit renders", steps: []step{
			{file: big, commit: "a", want: "limit", renders: 1},
			{file: big, commit: "a", output: 64 << 10, want: "ok", renders: 2},
		}},
		{name: "redis down renders as before", redisDown: true, steps: []step{
			{file: big, commit: "a", want: "limit", renders: 1},
			{file: big, commit: "a", want: "limit", renders: 2},
			{file: small, commit: "a", want: "ok", renders: 3},
		}},
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := redisForTest(t)
			if tt.redisDown {
				addr = testbed.ClosedAddr(t)
			}
			client := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { _ = client.Close() })
			root := t.TempDir()
			co := &countingCheckouter{Checkouter: fixedRoot(root)}
			renderers := map[int64]*Renderer{} // by output limit
			renderer := func(output int64) *Renderer {
				if r, ok := renderers[output]; ok {
					return r
				}
				l := DefaultSandboxLimits
				l.OutputBytes = output
				sb, err := NewSandbox(exe, l, discardLogger())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(sb.Close)
				r, err := NewRenderer(Config{Store: RedisStore{Client: client}, Git: co, CacheDir: t.TempDir(), Logger: discardLogger(), Sandbox: sb})
				if err != nil {
					t.Fatal(err)
				}
				renderers[output] = r
				return r
			}
			// The shared Redis outlives the test: commits of its own.
			commits := map[string]string{"a": randomSHA(), "b": randomSHA()}
			type attempt struct {
				before time.Time
				msg    string
			}
			last := map[string]attempt{} // the last limit break, by commit and limit
			for i, s := range tt.steps {
				if s.output == 0 {
					s.output = 1 << 10
				}
				writeFiles(t, root, map[string]string{"app/cm.yaml": files[s.file]})
				r := renderer(s.output)
				src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app"}
				req := SingleSource("app", "default", src, commits[s.commit])
				memo := fmt.Sprint(s.commit, s.output)
				before := time.Now()
				_, err := r.Render(t.Context(), req, s.hard)
				t.Logf("step %d: %v", i, err)
				switch s.want {
				case "ok":
					if err != nil {
						t.Fatalf("step %d: %v; want manifests", i, err)
					}
				case "limit":
					if !errors.Is(err, ErrRenderLimit) || !strings.Contains(err.Error(), "output limit of 1 KiB") ||
						strings.Contains(err.Error(), "remembered") {
						t.Fatalf("step %d: %v; want a fresh break of the output limit", i, err)
					}
					last[memo] = attempt{before: before, msg: err.Error()}
				case "remembered":
					rec := storedLimit(t, client, r.limitKey(req))
					if rec.Error != last[memo].msg || rec.At.Before(last[memo].before) {
						t.Fatalf("step %d: remembered %+v; want the last break, %q from after %v", i, rec, last[memo].msg, last[memo].before)
					}
					want := fmt.Sprintf("%s (remembered from the render at %s; a hard refresh renders again)", rec.Error, rec.At.Format(time.RFC3339))
					if !errors.Is(err, ErrRenderLimit) || err.Error() != want {
						t.Fatalf("step %d: %v; want %s", i, err, want)
					}
					var app *temporal.ApplicationError
					if !errors.As(failure.Activity(err), &app) || app.Type() != "RenderLimit" || !app.NonRetryable() {
						t.Fatalf("step %d: activity error %v; want a non-retryable RenderLimit", i, failure.Activity(err))
					}
				case "error":
					if err == nil || errors.Is(err, ErrRenderLimit) {
						t.Fatalf("step %d: %v; want an error other than a limit's", i, err)
					}
				}
				if co.n != s.renders {
					t.Fatalf("step %d: %d renders so far, want %d", i, co.n, s.renders)
				}
				if _, ok := r.Cached(t.Context(), req); ok != (s.want == "ok" && !tt.redisDown) {
					t.Fatalf("step %d: Cached = %v after %q", i, ok, s.want)
				}
			}
		})
	}
}

// storedLimit reads the limit break remembered under key.
func storedLimit(t *testing.T, c *redis.Client, key string) limitRecord {
	t.Helper()
	b, err := c.Get(t.Context(), key).Bytes()
	if err != nil {
		t.Fatalf("remembered limit break %s: %v", key, err)
	}
	var rec limitRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	ttl, err := c.TTL(t.Context(), key).Result()
	if err != nil || ttl <= 0 || ttl > limitMemoryTTL {
		t.Fatalf("TTL of %s = %v, %v; want at most %v", key, ttl, err, limitMemoryTTL)
	}
	return rec
}

func randomSHA() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// Only a limit break the render caused is remembered.
func TestRememberable(t *testing.T) {
	limit := fmt.Errorf("%w: render exceeded its memory limit of 1 GiB", ErrRenderLimit)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "limit break", err: limit, want: true},
		{name: "a sandbox's limit break", err: sandboxError("the rendered manifests are too large", "RenderLimit"), want: true},
		{name: "limit break, cut short", err: capError(fmt.Errorf("%w: %s", ErrRenderLimit, strings.Repeat("x", 2*maxErrorBytes))), want: true},
		{name: "sandbox killed from outside", err: &sandboxKilled{limit}},
		{name: "invalid manifest", err: fmt.Errorf("render app@sha: %w", manifest.ErrInvalidManifest)},
		{name: "bad path", err: ErrBadPath},
		{name: "network", err: io.ErrUnexpectedEOF},
		{name: "context", err: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rememberable(tt.err); got != tt.want {
				t.Fatalf("rememberable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// A sandbox ended by a signal the worker did not send fails the render
// as a limit break, but is not remembered: the worker's process group
// may be stopping.
func TestSandboxKilledNotRemembered(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a killed process has an exit code there")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := startSandbox(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err = p.died(io.EOF, DefaultSandboxLimits)
	if !errors.Is(err, ErrRenderLimit) || rememberable(err) {
		t.Fatalf("died = %v (rememberable %v); want a limit error not remembered", err, rememberable(err))
	}
}
