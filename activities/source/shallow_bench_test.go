package source

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// BenchmarkFirstCheckout measures a checkout of a repository with a long
// history (100 commits, each rewriting 10 files of 16 KiB of random data)
// from an empty mirror, fetching everything or the commit alone ("tip"),
// and the same followed by a rollback to the 50th commit, which no
// reference holds ("tip+rollback"). It reports the mirror's size on disk.
func BenchmarkFirstCheckout(b *testing.B) {
	srv, err := testbed.StartGitServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	url, err := srv.CreateRepo("bench/history.git")
	if err != nil {
		b.Fatal(err)
	}
	w, err := testbed.NewWorkRepo(b.Context(), b.TempDir(), url, nil)
	if err != nil {
		b.Fatal(err)
	}
	var shas []string
	commit := func(i int) {
		for f := range 10 {
			buf := make([]byte, 16<<10)
			_, _ = rand.Read(buf)
			if err := w.WriteFile(fmt.Sprintf("data/f%d.bin", f), fmt.Sprintf("%x", buf[:8<<10])); err != nil {
				b.Fatal(err)
			}
		}
		sha, err := w.CommitAndPush(b.Context(), fmt.Sprintf("commit %d", i))
		if err != nil {
			b.Fatal(err)
		}
		shas = append(shas, sha)
	}
	for i := range 100 {
		commit(i)
	}
	tip, old := shas[len(shas)-1], shas[49]
	for _, tc := range []struct {
		name string
		shas []string
	}{{"tip", []string{tip}}, {"tip+rollback", []string{tip, old}}} {
		for _, shallow := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/shallow=%v", tc.name, shallow), func(b *testing.B) {
				var size int64
				for b.Loop() {
					b.StopTimer()
					a, err := New(b.TempDir(), nil, quietLogger(), WithShallowFetch(shallow))
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					for _, sha := range tc.shas {
						if _, err := a.Checkout(b.Context(), url, sha); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					size = dirSize(b, filepath.Join(a.cacheDir, "mirrors"))
					b.StartTimer()
				}
				b.ReportMetric(float64(size)/(1<<20), "mirror-MiB")
			})
		}
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
