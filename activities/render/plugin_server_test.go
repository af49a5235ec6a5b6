package render

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
)

// pluginMode is a way to run plugins: in process (server nil) or through
// a plugin server.
type pluginMode struct {
	name   string
	server *PluginClient
}

func pluginModes(t *testing.T) []pluginMode {
	return []pluginMode{{name: "in-process"}, {name: "plugin-server", server: startTestPluginServer(t, PluginServerConfig{})}}
}

// startTestPluginServer serves a PluginServer on a unix socket until the
// test ends.
func startTestPluginServer(t *testing.T, cfg PluginServerConfig) *PluginClient {
	t.Helper()
	dir, err := os.MkdirTemp("", "wps-") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg.WorkDir, cfg.Logger = t.TempDir(), discardLogger()
	srv, err := NewPluginServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	c, err := NewPluginClient("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	return c
}

// tarEntry is one entry of a hand-made tar.
type tarEntry struct {
	typ        byte
	name, link string
	body       string
}

func makeTar(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil && h.Size > 0 {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestExtractCheckoutTar feeds the plugin server's unpacker tars that try
// to escape the scratch directory or exceed its limits.
func TestExtractCheckoutTar(t *testing.T) {
	file := func(name, body string) tarEntry { return tarEntry{typ: tar.TypeReg, name: name, body: body} }
	link := func(name, to string) tarEntry { return tarEntry{typ: tar.TypeSymlink, name: name, link: to} }
	tests := []struct {
		name     string
		entries  []tarEntry
		err      error
		contains string
	}{
		{name: "good", entries: []tarEntry{{typ: tar.TypeDir, name: "app/"}, file("app/a.yaml", "a: 1"), link("app/b.yaml", "a.yaml"), link("top", "app")}},
		{name: "dot-dot name", entries: []tarEntry{file("../evil", "x")}, err: ErrBadPath, contains: `"../evil" leads out of the archive`},
		{name: "dot-dot inside a name", entries: []tarEntry{file("app/../../evil", "x")}, err: ErrBadPath, contains: "leads out of the archive"},
		{name: "absolute name", entries: []tarEntry{file("/etc/evil", "x")}, err: ErrBadPath, contains: "leads out of the archive"},
		{name: "absolute symlink", entries: []tarEntry{link("token", "/var/run/secrets/kubernetes.io/serviceaccount/token")}, err: ErrBadPath, contains: `symlink "token" leads out of the archive`},
		{name: "climbing symlink", entries: []tarEntry{link("app/up", "../../..")}, err: ErrBadPath, contains: `symlink "app/up" leads out`},
		{name: "symlink through a symlink", entries: []tarEntry{{typ: tar.TypeDir, name: "d/"}, link("d/self", "."), link("d/esc", "self/../../x")}, err: ErrBadPath,
			contains: `symlink "d/esc" leads out of the archive through other symlinks`},
		{name: "chain of three", entries: []tarEntry{{typ: tar.TypeDir, name: "a/b/"}, link("a/b/up", ".."), link("a/up2", "b/up/.."), link("a/esc", "up2/../x")},
			err: ErrBadPath, contains: `symlink "a/esc" leads out of the archive through other symlinks`},
		{name: "entry under a symlink", entries: []tarEntry{link("l", "."), file("l/x", "x")}, err: ErrBadPath, contains: `"l/x" lies below the symlink "l"`},
		{name: "hard link", entries: []tarEntry{file("a", "x"), {typ: tar.TypeLink, name: "b", link: "a"}}, err: ErrBadPath, contains: `"b" is a hard link`},
		{name: "device", entries: []tarEntry{{typ: tar.TypeChar, name: "null"}}, err: ErrBadPath, contains: `"null" is a device`},
		{name: "too many bytes", entries: []tarEntry{file("a", strings.Repeat("x", 600)), file("b", strings.Repeat("x", 600))}, err: ErrCheckoutTooLarge, contains: "more than 1024 bytes"},
		{name: "too many files", entries: []tarEntry{file("a", ""), file("b", ""), file("c", ""), file("d", ""), file("e", ""), file("f", "")}, err: ErrCheckoutTooLarge, contains: "more than 5 entries"},
		{name: "same file twice", entries: []tarEntry{file("a", "x"), file("a", "y")}, err: ErrBadPath, contains: `"a" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "repo")
			if err := os.Mkdir(dst, 0o700); err != nil {
				t.Fatal(err)
			}
			err := extractCheckoutTar(bytes.NewReader(makeTar(t, tt.entries...)), dst, tarLimits{Bytes: 1 << 10, Entries: 5})
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if b, err := os.ReadFile(filepath.Join(dst, "top", "b.yaml")); err != nil || string(b) != "a: 1" {
					t.Fatalf("top/b.yaml = %q, %v", b, err)
				}
				return
			}
			wantError(t, err, tt.err, tt.contains)
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Fatalf("the tar wrote beside the checkout: %v", entries)
			}
		})
	}
}

// TestCheckoutTarRoundTrip streams a checkout and unpacks it: the same
// files, modes and in-repository symlinks.
func TestCheckoutTarRoundTrip(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"app/a.yaml": "a: 1", "app/sub/b.yaml": "b: 2", "run.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(src, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a.yaml", filepath.Join(src, "app", "sub", "a.yaml")); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeCheckoutTar(&b, src); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := extractCheckoutTar(&b, dst, tarLimits{Bytes: 1 << 20, Entries: 100}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(treeListing(t, src), treeListing(t, dst)); d != "" {
		t.Fatalf("tree (-src +dst):\n%s", d)
	}
	if st, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh lost its mode: %v, %v", st, err)
	}
	if got, err := os.Readlink(filepath.Join(dst, "app", "sub", "a.yaml")); err != nil || got != "../a.yaml" {
		t.Fatalf("symlink = %q, %v", got, err)
	}
}

// TestPluginServerDown renders with a plugin server that is not there:
// a clear, retryable error naming the address.
func TestPluginServerDown(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "gone.sock")
	c, err := NewPluginClient("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"app/x": ""})
	plugins := []PluginConfig{{Name: "cat", Generate: sh("cat x")}}
	src := appspec.Source{RepoURL: "https://example.com/r.git", Path: "app", Plugin: &appspec.Plugin{Name: "cat"}}
	_, err = renderWith(t, root, plugins, c, SingleSource("app", "default", src, "sha"))
	wantError(t, err, ErrPluginServerDown, "plugin server unreachable at unix://"+sock+" (is windlass plugin-server running?)")
	if failure.TypeOf(err) != "" {
		t.Fatalf("error type %q: a server that is down may come back, the error must stay retryable", failure.TypeOf(err))
	}
	// Discovery by command fails the render rather than take the source
	// for a directory.
	plugins = []PluginConfig{{Name: "cmd", Discover: PluginDiscover{Find: PluginFind{Command: []string{"true"}}}, Generate: sh("cat x")}}
	src.Plugin = nil
	_, err = renderWith(t, root, plugins, c, SingleSource("app", "default", src, "sha"))
	wantError(t, err, ErrPluginServerDown, "plugin discovery: plugin server unreachable")
}

// TestPluginServerBadRequests sends the server requests that no worker
// sends: each is refused with a clear error.
func TestPluginServerBadRequests(t *testing.T) {
	c := startTestPluginServer(t, PluginServerConfig{})
	post := func(body []byte) pluginResponse {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+PluginRunPath, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out pluginResponse
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("status %s for a bad request", resp.Status)
		}
		return out
	}
	frame := func(job pluginJob) []byte {
		var b bytes.Buffer
		if err := writeFrame(&b, job); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	good := []PluginConfig{{Name: "cat", Generate: sh("cat x")}}
	tests := []struct {
		name, contains string
		body           []byte
	}{
		{name: "not a frame", body: []byte("hello"), contains: "plugin job"},
		{name: "unknown op", body: frame(pluginJob{Op: "exec", Plugins: good}), contains: `unknown plugin job "exec"`},
		{name: "invalid plugins", body: frame(pluginJob{Op: pluginOpGenerate, Plugins: []PluginConfig{{Name: "x"}}}), contains: "generate.command is required"},
		{name: "app dir climbing out", body: append(frame(pluginJob{Op: pluginOpGenerate, Plugins: good, Dir: "../.."}), makeTar(t)...), contains: `"../.." is outside the repository`},
		{name: "escaping tar", body: append(frame(pluginJob{Op: pluginOpGenerate, Plugins: good, Dir: "."}), makeTar(t, tarEntry{typ: tar.TypeSymlink, name: "k", link: "/root/.kube/config"})...), contains: `symlink "k" leads out of the archive`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := post(tt.body)
			if !strings.Contains(out.Error, tt.contains) || out.ErrorType == "" {
				t.Fatalf("error %q (type %q), want one mentioning %q with a type", out.Error, out.ErrorType, tt.contains)
			}
		})
	}
}

// treeListing lists dir's entries as "path mode [content|-> target]".
func treeListing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := rel + " " + info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
