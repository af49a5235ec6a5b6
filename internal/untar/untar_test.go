package untar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type entry struct {
	typ        byte
	name, link string
	body       string
	mode       int64
}

func file(name, body string) entry { return entry{typ: tar.TypeReg, name: name, body: body} }
func link(name, to string) entry   { return entry{typ: tar.TypeSymlink, name: name, link: to} }
func dir(name string) entry        { return entry{typ: tar.TypeDir, name: name} }

func archive(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body))}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
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

// listing is dir's tree as "path mode [content|-> target]".
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := filepath.ToSlash(rel) + " " + info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		case info.Mode()&fs.ModeSymlink != 0:
			to, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + to
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExtract unpacks good archives and refuses hostile ones: each
// refusal names the entry, and nothing lands beside the directory.
func TestExtract(t *testing.T) {
	lim := Options{MaxBytes: 1 << 10, MaxEntries: 6}
	tests := []struct {
		name    string
		entries []entry
		opts    *Options
		want    []string // the listing of a good archive
		err     error
		msg     string
	}{
		{name: "files, folders and inner symlinks",
			entries: []entry{dir("app/"), file("app/a.yaml", "a: 1"), link("app/b.yaml", "a.yaml"), link("top", "app"),
				{typ: tar.TypeReg, name: "./run.sh", body: "#!/bin/sh", mode: 0o4775}},
			want: []string{"app drwxr-xr-x", "app/a.yaml -rw-r--r-- a: 1", "app/b.yaml Lrwxrwxrwx -> a.yaml",
				"run.sh -rwxr-xr-x #!/bin/sh", "top Lrwxrwxrwx -> app"}},
		{name: "top folder stripped", opts: &Options{MaxBytes: 1 << 10, MaxEntries: 6, StripTop: true},
			entries: []entry{dir("chart/"), file("chart/Chart.yaml", "name: c"), file("chart/templates/cm.yaml", "kind: ConfigMap")},
			want:    []string{"Chart.yaml -rw-r--r-- name: c", "templates drwxr-xr-x", "templates/cm.yaml -rw-r--r-- kind: ConfigMap"}},
		{name: "symlink to the root", entries: []entry{link("self", ".")}, want: []string{"self Lrwxrwxrwx -> ."}},

		{name: "dot-dot name", entries: []entry{file("../evil", "x")}, err: ErrUnsafe, msg: `"../evil" leads out of the archive`},
		{name: "dot-dot inside a name", entries: []entry{file("app/../../evil", "x")}, err: ErrUnsafe, msg: `"app/../../evil" leads out`},
		{name: "absolute name", entries: []entry{file("/etc/evil", "x")}, err: ErrUnsafe, msg: `"/etc/evil" leads out of the archive`},
		{name: "backslash name", entries: []entry{file(`..\evil`, "x")}, err: ErrUnsafe, msg: `leads out of the archive`},
		{name: "absolute symlink", entries: []entry{link("token", "/var/run/secrets/kubernetes.io/serviceaccount/token")}, err: ErrUnsafe,
			msg: `symlink "token" leads out of the archive`},
		{name: "climbing symlink", entries: []entry{link("app/up", "../../..")}, err: ErrUnsafe, msg: `symlink "app/up" leads out`},
		{name: "chain through a symlink", entries: []entry{dir("d/"), link("d/self", "."), link("d/esc", "self/../../x")}, err: ErrUnsafe,
			msg: `symlink "d/esc" leads out of the archive through other symlinks`},
		{name: "chain of three", entries: []entry{dir("a/b/"), link("a/b/up", ".."), link("a/up2", "b/up/.."), link("a/esc", "up2/../x")}, err: ErrUnsafe,
			msg: `symlink "a/esc" leads out of the archive through other symlinks`},
		{name: "symlink loop", entries: []entry{link("l1", "l2"), link("l2", "l1")}, err: ErrUnsafe, msg: "through other symlinks"},
		{name: "entry below a symlink", entries: []entry{link("l", "."), file("l/x", "x")}, err: ErrUnsafe, msg: `"l/x" lies below the symlink "l"`},
		{name: "symlink below a symlink", entries: []entry{link("d", "."), link("d/x", "..")}, err: ErrUnsafe, msg: `"d/x" lies below the symlink "d"`},
		{name: "file then symlink of one name", entries: []entry{file("a", "x"), link("a", "b")}, err: ErrUnsafe, msg: `"a" appears twice`},
		{name: "same file twice", entries: []entry{file("a", "x"), file("a", "y")}, err: ErrUnsafe, msg: `"a" appears twice`},
		{name: "hard link", entries: []entry{file("a", "x"), {typ: tar.TypeLink, name: "b", link: "a"}}, err: ErrUnsafe, msg: `"b" is a hard link`},
		{name: "device", entries: []entry{{typ: tar.TypeChar, name: "null"}}, err: ErrUnsafe, msg: `"null" is a device`},
		{name: "named pipe", entries: []entry{{typ: tar.TypeFifo, name: "p"}}, err: ErrUnsafe, msg: `"p" is a named pipe`},
		{name: "too many bytes", entries: []entry{file("a", strings.Repeat("x", 600)), file("b", strings.Repeat("x", 600))}, err: ErrTooLarge,
			msg: "more than 1024 bytes unpacked"},
		{name: "too many entries", entries: []entry{file("a", ""), file("b", ""), file("c", ""), file("d", ""), file("e", ""), file("f", ""), file("g", "")},
			err: ErrTooLarge, msg: "more than 6 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "out")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			o := lim
			if tt.opts != nil {
				o = *tt.opts
			}
			err := Extract(bytes.NewReader(archive(t, tt.entries...)), dst, o)
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, listing(t, dst)); d != "" {
					t.Fatalf("unpacked (-want +got):\n%s", d)
				}
				return
			}
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v; want %v saying %q", err, tt.err, tt.msg)
			}
			if left, _ := os.ReadDir(parent); len(left) != 1 {
				t.Fatalf("the archive wrote beside the directory: %v", left)
			}
		})
	}
}

func TestExtractRefusesBadInput(t *testing.T) {
	dst := t.TempDir()
	if err := Extract(strings.NewReader("not a tar at all, just text that is long enough"), dst, Options{MaxBytes: 10, MaxEntries: 1}); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("plain text: %v; want ErrUnreadable", err)
	}
	if err := Extract(bytes.NewReader(archive(t, file("a", "x"))), dst, Options{}); err == nil || !strings.Contains(err.Error(), "limits are required") {
		t.Fatalf("no limits: %v", err)
	}
}
