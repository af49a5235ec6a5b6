// Package ociregistry starts an in-process OCI distribution registry on
// loopback (go-containerregistry's, a real implementation of the
// distribution API) and pushes artifacts to it the way `oras push` does:
// an OCI 1.1 image manifest with an artifact type, an empty config and
// the given layers. Tests of OCI sources use it; nothing else should.
package ociregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// ArtifactType is what `oras push` records when given none.
const ArtifactType = "application/vnd.unknown.artifact.v1"

// Registry is a running registry.
type Registry struct {
	srv *httptest.Server
	// Host is its host:port on 127.0.0.1.
	Host string
}

// Start starts a registry; Close stops it.
func Start() *Registry {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	return &Registry{srv: srv, Host: strings.TrimPrefix(srv.URL, "http://")}
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

// URL is the oci:// URL of repository repo.
func (r *Registry) URL(repo string) string { return "oci://" + r.Host + "/" + repo }

// Layer is one layer of an artifact.
type Layer struct {
	MediaType string
	Data      []byte
}

// Push pushes an artifact of layers to repo, tags it with each of tags
// and returns the manifest's digest. The manifest is reproducible: the
// same layers give the same digest.
func (r *Registry) Push(ctx context.Context, repo string, tags []string, layers ...Layer) (string, error) {
	rep, err := remote.NewRepository(r.Host + "/" + repo)
	if err != nil {
		return "", err
	}
	rep.PlainHTTP = true
	descs := make([]ocispec.Descriptor, 0, len(layers))
	for _, l := range layers {
		d := content.NewDescriptorFromBytes(l.MediaType, l.Data)
		if err := rep.Push(ctx, d, bytes.NewReader(l.Data)); err != nil {
			return "", fmt.Errorf("push layer: %w", err)
		}
		descs = append(descs, d)
	}
	m, err := oras.PackManifest(ctx, rep, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: descs, ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "2026-01-01T00:00:00Z"},
	})
	if err != nil {
		return "", fmt.Errorf("push manifest: %w", err)
	}
	for _, tag := range tags {
		if err := rep.Tag(ctx, m, tag); err != nil {
			return "", fmt.Errorf("tag %s: %w", tag, err)
		}
	}
	return m.Digest.String(), nil
}

// TarGzDir packs the folder dir as a gzipped tarball of paths relative to
// it, prefixed by prefix ("" for none): `oras push reg/repo:tag folder`
// packs a folder under its own name.
func TarGzDir(dir, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(filepath.Join(prefix, rel))
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname, h.ModTime = "", "", h.ModTime.Truncate(0)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
