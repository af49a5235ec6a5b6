package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The bundle directory holds the committed fallback page and, once
// `make ui` ran, the built app in dist.
//
//go:embed all:bundle
var bundle embed.FS

const (
	distDir     = "bundle/dist"
	fallbackDir = "bundle/fallback"
	// BuildInfoFile is the stamp `make ui` writes into the bundle.
	BuildInfoFile = "build-info.json"
)

// BuildInfo is the stamp of a built bundle.
type BuildInfo struct {
	// SourceHash is SourceHash of the sources the bundle was built from.
	SourceHash string `json:"sourceHash"`
}

// Assets returns the UI's files (index.html at the root, hashed files
// under assets/) and whether they are the built app; when the app is not
// built, they are the fallback page.
func Assets() (fs.FS, bool) {
	if _, err := fs.Stat(bundle, distDir+"/index.html"); err == nil {
		sub, err := fs.Sub(bundle, distDir)
		if err == nil {
			return sub, true
		}
	}
	sub, err := fs.Sub(bundle, fallbackDir)
	if err != nil {
		panic(fmt.Sprintf("web: the fallback page is missing: %v", err)) // committed, so unreachable
	}
	return sub, false
}

// EmbeddedBuildInfo reads the stamp of the embedded bundle (an error when
// the app is not built or carries no stamp).
func EmbeddedBuildInfo() (BuildInfo, error) {
	return ReadBuildInfo(bundle, distDir+"/"+BuildInfoFile)
}

// ReadBuildInfo reads a build-info.json from fsys.
func ReadBuildInfo(fsys fs.FS, name string) (BuildInfo, error) {
	var bi BuildInfo
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return bi, fmt.Errorf("read ui build info: %w", err)
	}
	if err := json.Unmarshal(b, &bi); err != nil {
		return bi, fmt.Errorf("read ui build info %s: %w", name, err)
	}
	if bi.SourceHash == "" {
		return bi, fmt.Errorf("read ui build info %s: no sourceHash", name)
	}
	return bi, nil
}

// sourceFiles and sourceDirs are the inputs of the bundle, relative to
// the web directory; test files (*.test.ts, *.test.tsx) are left out.
var (
	sourceFiles = []string{"index.html", "package.json", "package-lock.json", "tsconfig.json", "vite.config.ts"}
	sourceDirs  = []string{"src", "public"}
)

// SourceHash hashes the UI's sources under dir (the web directory): the
// SHA-256 of each input file's slash path and content, in path order.
func SourceHash(dir string) (string, error) {
	var files []string
	for _, f := range sourceFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("ui sources: %w", err)
		}
		files = append(files, f)
	}
	for _, d := range sourceDirs {
		root := filepath.Join(dir, d)
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() || isTestFile(e.Name()) {
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
			return nil
		})
		if err != nil && !(errors.Is(err, fs.ErrNotExist) && d == "public") {
			return "", fmt.Errorf("ui sources: %w", err)
		}
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return "", fmt.Errorf("ui sources: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func isTestFile(name string) bool {
	base := strings.TrimSuffix(name, path.Ext(name))
	return strings.HasSuffix(base, ".test")
}
