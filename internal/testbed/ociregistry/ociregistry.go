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
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
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
	// push serves the same content without auth or TLS, for Push; nil
	// when Host itself is open.
	push *httptest.Server
}

// Options protect a registry: clients must send the basic credential
// Username:Password or the bearer Token (any of those set), over TLS when
// TLS is set.
type Options struct {
	Username, Password string
	Token              string
	TLS                *tls.Config
}

// Start starts an open registry; Close stops it.
func Start() *Registry { return StartWith(Options{}) }

// StartWith starts a registry protected by o. Push still works: it goes
// to a second, open listener on the same content.
func StartWith(o Options) *Registry {
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if o.Username == "" && o.Token == "" && o.TLS == nil {
		srv := httptest.NewServer(h)
		return &Registry{srv: srv, Host: strings.TrimPrefix(srv.URL, "http://")}
	}
	srv := httptest.NewUnstartedServer(o.guard(h))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	if o.TLS != nil {
		srv.TLS = o.TLS
		srv.StartTLS()
	} else {
		srv.Start()
	}
	host := strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://")
	return &Registry{srv: srv, Host: host, push: httptest.NewServer(h)}
}

// guard answers 401 with a challenge unless the request carries the
// credential of o; a bearer registry challenges with Bearer, as
// registries that take tokens do.
func (o Options) guard(next http.Handler) http.Handler {
	if o.Username == "" && o.Token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		basic := o.Username != "" && ok && u == o.Username && subtle.ConstantTimeCompare([]byte(p), []byte(o.Password)) == 1
		bearer := o.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+o.Token)) == 1
		if !basic && !bearer {
			if o.Token != "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="https://auth.invalid/token",service="test"`)
			} else {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			}
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops the registry.
func (r *Registry) Close() {
	r.srv.Close()
	if r.push != nil {
		r.push.Close()
	}
}

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
	host := r.Host
	if r.push != nil {
		host = strings.TrimPrefix(r.push.URL, "http://")
	}
	rep, err := remote.NewRepository(host + "/" + repo)
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
