package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/testbed/ociregistry"
)

// ociRegistry starts an in-process OCI registry for t and returns its
// host:port.
func ociRegistry(t *testing.T) string {
	t.Helper()
	r := ociregistry.Start()
	t.Cleanup(r.Close)
	return r.Host
}

// tarEntry is one entry of a test archive: a file, a folder (Dir), a
// symlink (Link) or another type (Type).
type tarEntry struct {
	Name, Body, Link string
	Dir              bool
	Type             byte
	Size             int64 // a size other than len(Body), to lie
}

// tarball packs entries, gzipped, as `oras push` packs a folder.
func tarball(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.Body))}
		switch {
		case e.Dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.Link, 0
		case e.Type != 0:
			h.Typeflag, h.Linkname, h.Size = e.Type, "a", 0
		}
		if e.Size > 0 {
			h.Size = e.Size
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, io.LimitReader(strings.NewReader(e.Body+strings.Repeat("\x00", int(max(0, h.Size-int64(len(e.Body)))))), h.Size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pushArtifact pushes an artifact of layers to host/repo as `oras push`
// does, tags it with tags and returns its digest.
func pushArtifact(t *testing.T, host, repo string, tags []string, layers ...ociLayer) string {
	t.Helper()
	r := &ociregistry.Registry{Host: host}
	d, err := r.Push(t.Context(), repo, tags, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type ociLayer = ociregistry.Layer

func tgzLayer(data []byte) ociLayer { return ociLayer{MediaType: MediaTypeTarGzip, Data: data} }

// readTree returns the files under dir, by slash path; symlinks as "-> target".
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			to, err := os.Readlink(p)
			files[filepath.ToSlash(rel)] = "-> " + to
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOCIResolveAndCheckout resolves each kind of revision of a plain OCI
// artifact to its manifest digest and unpacks it: the checkout holds
// exactly the files `oras pull` would unpack.
func TestOCIResolveAndCheckout(t *testing.T) {
	host := ociRegistry(t)
	v1 := []tarEntry{{Name: "app/", Dir: true}, {Name: "app/cm.yaml", Body: "kind: ConfigMap # v1\n"}, {Name: "app/link.yaml", Link: "cm.yaml"}}
	v2 := []tarEntry{{Name: "app/", Dir: true}, {Name: "app/cm.yaml", Body: "kind: ConfigMap # v2\n"}, {Name: "app/sub/x.yaml", Body: "x: 1\n"}}
	d1 := pushArtifact(t, host, "team/app", []string{"1.0.0", "1.1.0"}, tgzLayer(tarball(t, v1...)))
	d2 := pushArtifact(t, host, "team/app", []string{"2.0.0", "latest"}, tgzLayer(tarball(t, v2...)))
	dPre := pushArtifact(t, host, "team/app", []string{"2.1.0-rc.1", "dev_branch"}, tgzLayer(tarball(t, v2...)))
	if dPre != d2 {
		t.Fatalf("the same content packed twice got two digests: %s, %s", d2, dPre)
	}
	repoURL := "oci://" + host + "/team/app"
	want1 := map[string]string{"app/cm.yaml": "kind: ConfigMap # v1\n", "app/link.yaml": "-> cm.yaml"}
	want2 := map[string]string{"app/cm.yaml": "kind: ConfigMap # v2\n", "app/sub/x.yaml": "x: 1\n"}
	a := newActivities(t, nil)
	for _, tc := range []struct {
		name, rev, wantRef, wantSHA string
		want                        map[string]string
	}{
		{name: "tag", rev: "1.1.0", wantRef: "1.1.0", wantSHA: d1, want: want1},
		{name: "empty is latest", rev: "", wantRef: "latest", wantSHA: d2, want: want2},
		{name: "HEAD is latest", rev: "HEAD", wantRef: "latest", wantSHA: d2, want: want2},
		{name: "digest", rev: d1, wantSHA: d1, want: want1},
		{name: "semver range", rev: "^1.0", wantRef: "1.1.0", wantSHA: d1, want: want1},
		{name: "range skips pre-releases", rev: ">=1.0.0", wantRef: "2.0.0", wantSHA: d2, want: want2},
		{name: "wildcard", rev: "1.0.*", wantRef: "1.0.0", wantSHA: d1, want: want1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: repoURL, Revision: tc.rev})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ResolveOutput{SHA: tc.wantSHA, Ref: tc.wantRef}, out); diff != "" {
				t.Fatalf("resolve (-want +got):\n%s", diff)
			}
			dir, err := a.Checkout(t.Context(), repoURL, out.SHA)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, readTree(t, dir)); diff != "" {
				t.Fatalf("checkout (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOCIMovingTag: a tag that moves resolves to its new digest, as a
// branch does, while the old digest still checks out what it was.
func TestOCIMovingTag(t *testing.T) {
	host := ociRegistry(t)
	repoURL := "oci://" + host + "/moving"
	a := newActivities(t, nil)
	d1 := pushArtifact(t, host, "moving", []string{"stable"}, tgzLayer(tarball(t, tarEntry{Name: "a.yaml", Body: "one\n"})))
	if out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: repoURL, Revision: "stable"}); err != nil || out.SHA != d1 {
		t.Fatalf("resolve stable = %v, %v; want %s", out, err, d1)
	}
	d2 := pushArtifact(t, host, "moving", []string{"stable"}, tgzLayer(tarball(t, tarEntry{Name: "a.yaml", Body: "two\n"})))
	out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: repoURL, Revision: "stable"})
	if err != nil || out.SHA != d2 || d2 == d1 {
		t.Fatalf("resolve moved stable = %v, %v; want %s (was %s)", out, err, d2, d1)
	}
	for d, want := range map[string]string{d1: "one\n", d2: "two\n"} {
		dir, err := a.Checkout(t.Context(), repoURL, d)
		if err != nil {
			t.Fatal(err)
		}
		if got := readTree(t, dir)["a.yaml"]; got != want {
			t.Fatalf("checkout %s: a.yaml = %q, want %q", d, got, want)
		}
	}
}

// TestOCIHelmChartLayer: a Helm chart pushed as an OCI artifact unpacks
// with the chart's folder as the root, so that path "." is the chart.
func TestOCIHelmChartLayer(t *testing.T) {
	host := ociRegistry(t)
	chart := tarball(t, tarEntry{Name: "web/Chart.yaml", Body: "apiVersion: v2\nname: web\nversion: 0.1.0\n"},
		tarEntry{Name: "web/templates/cm.yaml", Body: "kind: ConfigMap\n"})
	d := pushArtifact(t, host, "charts/web", []string{"0.1.0"}, ociLayer{MediaType: MediaTypeHelmChart, Data: chart})
	a := newActivities(t, nil)
	dir, err := a.Checkout(t.Context(), "oci://"+host+"/charts/web", d)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n", "templates/cm.yaml": "kind: ConfigMap\n"}
	if diff := cmp.Diff(want, readTree(t, dir)); diff != "" {
		t.Fatalf("checkout (-want +got):\n%s", diff)
	}
}

// TestOCIBadInput: each bad artifact or revision is a clear error that
// retrying cannot fix, and leaves nothing behind in the checkouts.
func TestOCIBadInput(t *testing.T) {
	host := ociRegistry(t)
	ok := tgzLayer(tarball(t, tarEntry{Name: "a.yaml", Body: "a: 1\n"}))
	noise := make([]byte, 32<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise) // incompressible
	big := tgzLayer(tarball(t, tarEntry{Name: "big.bin", Body: string(noise)}))
	bomb := tgzLayer(tarball(t, tarEntry{Name: "zeros", Size: 8 << 20}))
	missing := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name   string
		layers []ociLayer
		rev    string // resolve this instead of checking the artifact out
		want   error
		msg    string
	}{
		{name: "digest that does not exist", rev: missing, want: ErrRevisionNotFound, msg: missing},
		{name: "malformed digest", rev: "sha256:xyz", want: ErrRevisionNotFound, msg: "is not a digest"},
		{name: "tag that does not exist", rev: "9.9.9", want: ErrRevisionNotFound, msg: "9.9.9"},
		{name: "range no tag satisfies", rev: "^7.0", want: ErrRevisionNotFound, msg: `no tag of oci://`},
		{name: "artifact over the limit", layers: []ociLayer{big}, want: ErrArtifactTooLarge, msg: "over the limit of 16384"},
		{name: "unpacked over the limit", layers: []ociLayer{bomb}, want: ErrArtifactTooLarge, msg: "more than 1048576 bytes unpacked"},
		{name: "two layers", layers: []ociLayer{ok, ok}, want: ErrBadArtifact, msg: "has 2 layers; want one"},
		{name: "layer media type", layers: []ociLayer{{MediaType: "application/vnd.example.thing", Data: []byte("x")}}, want: ErrBadArtifact,
			msg: `layer media type "application/vnd.example.thing" is not one of`},
		{name: "not a tarball", layers: []ociLayer{{MediaType: MediaTypeTarGzip, Data: []byte("plain text, not an archive")}}, want: ErrBadArtifact, msg: "unreadable archive"},
		{name: "entry climbs out", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "../evil.yaml", Body: "x"}))}, want: ErrBadArtifact,
			msg: `"../evil.yaml" leads out of the archive`},
		{name: "absolute entry", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "/etc/evil", Body: "x"}))}, want: ErrBadArtifact,
			msg: `"/etc/evil" leads out of the archive`},
		{name: "symlink out", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "a/l", Link: "../../etc/passwd"}))}, want: ErrBadArtifact,
			msg: `symlink "a/l" leads out of the archive`},
		{name: "absolute symlink", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "l", Link: "/etc/passwd"}))}, want: ErrBadArtifact,
			msg: `symlink "l" leads out of the archive`},
		{name: "entry through a symlink", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "d", Link: "."}, tarEntry{Name: "d/x", Link: ".."}))},
			want: ErrBadArtifact, msg: `"d/x" lies below the symlink "d"`},
		{name: "symlink chain out", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "d/", Dir: true}, tarEntry{Name: "d/self", Link: "."},
			tarEntry{Name: "d/esc", Link: "self/../../etc/passwd"}))}, want: ErrBadArtifact, msg: `symlink "d/esc" leads out of the archive through other symlinks`},
		{name: "same name twice", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "a", Body: "x"}, tarEntry{Name: "a", Link: "b"}))},
			want: ErrBadArtifact, msg: `"a" appears twice`},
		{name: "too many entries", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "a"}, tarEntry{Name: "b"}, tarEntry{Name: "c"}, tarEntry{Name: "d"}, tarEntry{Name: "e"}))},
			want: ErrArtifactTooLarge, msg: "more than 4 entries"},
		{name: "hard link", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "a", Body: "x"}, tarEntry{Name: "b", Type: tar.TypeLink}))},
			want: ErrBadArtifact, msg: `"b" is a hard link`},
		{name: "device", layers: []ociLayer{tgzLayer(tarball(t, tarEntry{Name: "dev", Type: tar.TypeChar}))}, want: ErrBadArtifact, msg: `"dev" is a device`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newActivities(t, nil, WithOCILimits(OCILimits{MaxArtifactBytes: 16 << 10, MaxExtractedBytes: 1 << 20, MaxFiles: 4}))
			repo := "bad/" + strings.ReplaceAll(tc.name, " ", "-")
			repoURL := "oci://" + host + "/" + repo
			var err error
			if tc.rev != "" {
				pushArtifact(t, host, repo, []string{"1.0.0"}, ok)
				_, err = a.ResolveRevision(t.Context(), ResolveInput{RepoURL: repoURL, Revision: tc.rev})
			} else {
				d := pushArtifact(t, host, repo, []string{"1.0.0"}, tc.layers...)
				if out, rerr := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: repoURL, Revision: "1.0.0"}); rerr != nil || out.SHA != d {
					t.Fatalf("resolve = %v, %v; want %s", out, rerr, d)
				}
				_, err = a.Checkout(t.Context(), repoURL, d)
				err = failure.Activity(err)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			wantErrType(t, err, tc.want.(*failure.Sentinel).Type())
			if left := dirNames(t, filepath.Join(a.cacheDir, "trees")); len(left) > 0 {
				t.Errorf("checkouts left behind: %v", left)
			}
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestOCIUnreachableIsRetryable: a registry that is down is worth a retry.
func TestOCIUnreachableIsRetryable(t *testing.T) {
	srv := httptest.NewServer(nil)
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	a := newActivities(t, nil)
	_, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: "oci://" + host + "/app", Revision: "1.0.0"})
	if errors.Is(err, ErrRevisionNotFound) {
		t.Fatalf("resolve against a closed registry = %v; want a retryable error", err)
	}
	wantErrType(t, err, "")
}
