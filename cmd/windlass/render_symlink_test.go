package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestRenderRepoSymlinksOut renders, from a Git repository, files that
// symlinks lead out of the checkout: straight out, through a chain of
// links whose text stays inside but which resolves to "/", and such a
// chain to /dev/zero. Each render fails naming the file, and never shows
// the outside file.
func TestRenderRepoSymlinksOut(t *testing.T) {
	const secret = "outside-secret-5be2"
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {x: "+secret+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	// d/a/up is "..", d/L "a/up/.." (the root) and each d/Mi "M(i-1)/..",
	// one level higher: d/M30 is "/" from any checkout less than 30 deep.
	// Every text stays inside the checkout.
	links := map[string]string{"d/a/up": "..", "d/L": "a/up/..", "d/M1": "L/.."}
	for i := 2; i <= 30; i++ {
		links[fmt.Sprintf("d/M%d", i)] = fmt.Sprintf("M%d/..", i-1)
	}
	links["chain/secret.yaml"] = "../d/M30" + outside
	links["zero/zero.yaml"] = "../d/M30/dev/zero"
	links["out/secret.yaml"] = outside
	for link, target := range links {
		p := filepath.Join(dir, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(link); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, dir, map[string]string{"chain/cm.yaml": configMap("a"), "zero/cm.yaml": configMap("a"), "out/cm.yaml": configMap("a")})
	for _, p := range []string{"chain/cm.yaml", "zero/cm.yaml", "out/cm.yaml"} {
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.Commit("links", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, file string }{
		{"chain", "chain/secret.yaml"},
		{"zero", "zero/zero.yaml"},
		{"out", "out/secret.yaml"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			out, stderr, err := renderCLI(t, "--repo", "file://"+dir, "--path", tt.path)
			if err == nil {
				t.Fatalf("render succeeded:\n%s", out)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.file) {
				t.Fatalf("error %q does not name %s", err, tt.file)
			}
			for _, s := range []string{out, stderr, err.Error()} {
				if strings.Contains(s, secret) {
					t.Fatalf("the outside file shows: %q", s)
				}
			}
		})
	}
}
