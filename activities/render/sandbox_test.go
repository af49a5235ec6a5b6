package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestMain makes this test binary a render sandbox when a test starts it
// as one.
func TestMain(m *testing.M) {
	if os.Getenv(SandboxEnv) == "1" {
		os.Exit(SandboxMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// sandboxed is a Renderer that renders in sandboxes of this test binary,
// under limits, from the checkout root.
func sandboxed(t *testing.T, root string, limits SandboxLimits) *Renderer {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := NewSandbox(exe, limits, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	r, err := NewRenderer(Config{Store: NewMemoryStore(), Git: fixedRoot(root), CacheDir: t.TempDir(), Logger: discardLogger(), Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A sandbox renders what this process renders, keeps an error's type, and
// serves render after render.
func TestSandboxRendersAsInProcess(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"dir/cm.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"kust/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: k-\n",
		"kust/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"jsonnet/main.jsonnet":    "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }\n",
		"bad/kustomization.yaml":  "resources: [../../../../../../../../etc]\n",
		"chart/Chart.yaml":        helmOKChart,
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n",
	})
	r := sandboxed(t, root, DefaultSandboxLimits)
	var rendered timings
	r.metrics = &rendered
	for _, tc := range []struct{ path, want string }{
		{"dir", "a"}, {"kust", "k-b"}, {"jsonnet", "c"}, {"chart", "app"}, {"dir", "a"},
	} {
		src := appspec.Source{RepoURL: "https://example.com/r.git", Path: tc.path}
		ref, err := r.Render(t.Context(), SingleSource("app", "default", src, "sha"), true)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		objs, err := r.Load(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 || objs[0].GetName() != tc.want {
			t.Fatalf("%s: rendered %v, want %s", tc.path, objs, tc.want)
		}
	}
	if len(rendered) != 5 || rendered[0].Tool != appspec.ToolDirectory || rendered[3].Tool != appspec.ToolHelm {
		t.Fatalf("the worker's render metrics: %+v; want the sandbox's five renders", rendered)
	}
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "bad"}
	_, err := r.Render(t.Context(), SingleSource("app", "default", src, "sha"), true)
	if !errors.Is(err, ErrBadPath) || failure.TypeOf(failure.Activity(err)) != "BadPath" {
		t.Fatalf("err = %v; want ErrBadPath, typed", err)
	}
}

// TestSandboxHelmOptions renders through the sandbox a chart whose values
// break its values.schema.json: the Helm options travel in the request to
// the child, so skipSchemaValidation renders it and the default refuses it.
func TestSandboxHelmOptions(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"chart/Chart.yaml":         helmOKChart,
		"chart/values.yaml":        "replicas: three\n",
		"chart/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
		"chart/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n",
	})
	r := sandboxed(t, root, DefaultSandboxLimits)
	tests := []struct {
		name string
		helm *appspec.Helm
		err  error
	}{
		{name: "schema checked", err: ErrChart},
		{name: "schema skipped", helm: &appspec.Helm{SkipSchemaValidation: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "chart", Helm: tt.helm}
			_, err := r.Render(t.Context(), SingleSource("app", "default", src, "sha"), true)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Render() error = %v, want %v", err, tt.err)
			}
		})
	}
}

// A render that breaks a limit fails with an error that names the limit,
// and the next render in a new sandbox works: this process lives on.
func TestSandboxLimits(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"recursion/main.jsonnet":    "local f(x) = f(x + 1) tailstrict; f(0)\n",
		"memory/main.jsonnet":       "std.length(std.foldl(function(a, b) a + [b], std.range(1, 50000000), []))\n",
		"big/main.jsonnet":          "[{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-' + i }, data: { x: std.repeat('x', 1000) } } for i in std.range(1, 200)]\n",
		"cpu/main.jsonnet":          "std.foldl(function(a, b) std.md5(std.repeat(a, 300)), std.range(1, 100000), 'x')\n",
		"ok/cm.yaml":                cm("fine"),
		"laughs/kustomization.yaml": "resources: [bomb.yaml]\n",
		"laughs/bomb.yaml":          laughs,
	})
	limits := SandboxLimits{MemoryBytes: 512 << 20, CPU: 20 * time.Second, Wall: 2 * time.Minute, StackBytes: 16 << 20, OutputBytes: 64 << 10}
	for _, tc := range []struct {
		name, path string
		limits     func(SandboxLimits) SandboxLimits
		want       string
	}{
		{name: "endless recursion", path: "recursion", want: "stack limit of 16 MiB"},
		{name: "memory bomb", path: "memory", want: "memory limit of 512 MiB"},
		{name: "kustomize billion laughs", path: "laughs", want: "memory limit of 512 MiB"},
		{name: "output", path: "big", want: "output limit of 64 KiB"},
		{name: "wall time", path: "cpu", limits: func(l SandboxLimits) SandboxLimits { l.Wall = time.Second; return l }, want: "wall-time limit of 1s"},
		{name: "CPU time", path: "cpu", limits: func(l SandboxLimits) SandboxLimits { l.CPU = time.Second; return l }, want: "CPU-time limit of 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := limits
			if tc.limits != nil {
				l = tc.limits(l)
			}
			r := sandboxed(t, root, l)
			src := appspec.Source{RepoURL: "https://example.com/r.git", Path: tc.path}
			_, err := r.Render(t.Context(), SingleSource("app", "default", src, "sha"), true)
			if !errors.Is(err, ErrRenderLimit) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrRenderLimit naming %q", err, tc.want)
			}
			if typ := failure.TypeOf(failure.Activity(err)); typ != "RenderLimit" {
				t.Fatalf("error type %q, want RenderLimit (not retried)", typ)
			}
			src.Path = "ok"
			ref, err := r.Render(t.Context(), SingleSource("app", "default", src, "sha"), true)
			if err != nil || ref.Count != 1 {
				t.Fatalf("the next render: %+v, %v", ref, err)
			}
		})
	}
}

// laughs is a YAML "billion laughs": nine levels of nine aliases.
var laughs = func() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}()

// A render waits for a free sandbox slot, and gives up with its context.
func TestSandboxSlots(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"ok/cm.yaml": cm("fine")})
	r := sandboxed(t, root, DefaultSandboxLimits)
	r.sandbox.slots = make(chan struct{}, 1)
	r.sandbox.slots <- struct{}{} // another render holds the only slot
	req := SingleSource("app", "default", appspec.Source{RepoURL: "https://example.com/r.git", Path: "ok"}, "sha")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := r.Render(ctx, req, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a render without a free slot: %v; want it to wait until its context ends", err)
	}
	<-r.sandbox.slots
	if ref, err := r.Render(t.Context(), req, true); err != nil || ref.Count != 1 {
		t.Fatalf("with a free slot: %+v, %v", ref, err)
	}
}

// A sandbox inherits no worker setting or credential from the
// environment.
func TestSandboxEnviron(t *testing.T) {
	got := sandboxEnviron([]string{"PATH=/bin", "WINDLASS_REDIS_PASSWORD=s3cret", "TEMPORAL_API_KEY=k", "HOME=/home/w", "HTTPS_PROXY=http://p:3128"})
	if d := cmp.Diff([]string{"PATH=/bin", "HOME=/home/w", "HTTPS_PROXY=http://p:3128"}, got); d != "" {
		t.Fatal(d)
	}
}

func TestBytesText(t *testing.T) {
	got := []string{bytesText(1 << 30), bytesText(64 << 20), bytesText(64 << 10), bytesText(100)}
	if d := cmp.Diff([]string{"1 GiB", "64 MiB", "64 KiB", "100 bytes"}, got); d != "" {
		t.Fatal(d)
	}
}

// A sandbox bounds a chart repository's silence by the worker's
// NetTimeout, not by its own wall-time limit.
func TestSandboxNetTimeout(t *testing.T) {
	stalled := testbed.StallingServer(t, testbed.Stall{Headers: true})
	r := sandboxed(t, t.TempDir(), DefaultSandboxLimits)
	r.netTimeout = 200 * time.Millisecond
	src := appspec.Source{RepoURL: stalled.URL, Chart: "demo"}
	_, err := r.Render(t.Context(), SingleSource("app", "default", src, "1.0.0"), true)
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Fatalf("error = %v, want the net timeout", err)
	}
}

// A sandbox reads each repository file within the worker's MaxFileBytes.
func TestSandboxFileLimit(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"app/big.yaml": cm("big") + "data: {x: " + strings.Repeat("y", 200) + "}\n"})
	r := sandboxed(t, root, DefaultSandboxLimits)
	r.maxFile = 100
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app"}
	_, err := r.Render(t.Context(), SingleSource("app", "ns", src, "sha"), true)
	wantError(t, err, ErrFileTooLarge, `"app/big.yaml" is larger than 100 bytes`, root)
}
