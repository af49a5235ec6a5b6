package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/netdeadline"
	"github.com/windlass-cd/windlass/internal/untar"
)

// Errors of OCI sources that retrying cannot fix.
var (
	// ErrArtifactTooLarge is an artifact whose layer, or whose unpacked
	// files, exceed the configured limit (WithOCILimits).
	ErrArtifactTooLarge = failure.Permanent("ArtifactTooLarge", "OCI artifact too large")
	// ErrBadArtifact is an artifact Windlass cannot read as a source: not
	// one layer of an accepted media type, or an archive that is not safe.
	ErrBadArtifact = failure.Permanent("InvalidArtifact", "invalid OCI artifact")
)

// Media types of an OCI source's one layer, as Argo CD accepts them by
// default: a gzipped tarball (what `oras push` makes of a folder) and a
// Helm chart, whose top folder is the chart's root.
const (
	MediaTypeTarGzip   = ocispec.MediaTypeImageLayerGzip
	MediaTypeHelmChart = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// DefaultOCILayerMediaTypes are the layer media types accepted by default.
var DefaultOCILayerMediaTypes = []string{MediaTypeTarGzip, MediaTypeHelmChart}

// OCILimits bound what an OCI source may bring onto the worker's disk.
type OCILimits struct {
	// MaxArtifactBytes bounds the layer as the registry sends it.
	MaxArtifactBytes int64
	// MaxExtractedBytes bounds the files unpacked from it, in total.
	MaxExtractedBytes int64
	// MaxFiles bounds the number of entries unpacked.
	MaxFiles int
	// LayerMediaTypes are the accepted layer media types (default
	// DefaultOCILayerMediaTypes).
	LayerMediaTypes []string
}

// Defaults of OCILimits.
const (
	DefaultOCIMaxArtifactBytes  = 100 << 20
	DefaultOCIMaxExtractedBytes = 1 << 30
	DefaultOCIMaxFiles          = 100_000
	// ociMaxManifestBytes bounds a manifest, as registries do.
	ociMaxManifestBytes = 4 << 20
)

// WithOCILimits sets the limits of OCI sources; a zero field keeps its
// default.
func WithOCILimits(l OCILimits) Option {
	return func(a *Activities) {
		if l.MaxArtifactBytes > 0 {
			a.oci.MaxArtifactBytes = l.MaxArtifactBytes
		}
		if l.MaxExtractedBytes > 0 {
			a.oci.MaxExtractedBytes = l.MaxExtractedBytes
		}
		if l.MaxFiles > 0 {
			a.oci.MaxFiles = l.MaxFiles
		}
		if len(l.LayerMediaTypes) > 0 {
			a.oci.LayerMediaTypes = slices.Clone(l.LayerMediaTypes)
		}
	}
}

func defaultOCILimits() OCILimits {
	return OCILimits{
		MaxArtifactBytes: DefaultOCIMaxArtifactBytes, MaxExtractedBytes: DefaultOCIMaxExtractedBytes,
		MaxFiles: DefaultOCIMaxFiles, LayerMediaTypes: DefaultOCILayerMediaTypes,
	}
}

// OCICredentials is the hook for registry credentials: when the
// Activities' CredentialResolver also implements it (RegisteredAuth
// does), OCI sources ask it for the credential of their repository,
// inside the activity. Without it, registries are read anonymously.
type OCICredentials interface {
	OCICredential(ctx context.Context, repoURL string) (auth.Credential, error)
}

// IsOCI reports whether repoURL names an OCI source (oci://).
func IsOCI(repoURL string) bool { return appspec.IsOCIRepoURL(repoURL) }

// ociRepository opens the registry repository of an oci:// URL, with the
// credential and the TLS and proxy settings registered for it. A
// registry on the loopback interface is spoken to over plain HTTP, as
// Docker and Helm do, unless its settings name a CA, a client
// certificate or insecure TLS.
func (a *Activities) ociRepository(ctx context.Context, repoURL string) (*remote.Repository, error) {
	ref, err := registry.ParseReference(strings.TrimSuffix(repoURL[len("oci://"):], "/"))
	if err != nil || ref.Reference != "" {
		return nil, fmt.Errorf("%w: %q is not oci://registry/repository", ErrRepoNotFound, redactURL(repoURL))
	}
	o, err := a.transportOptions(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	tr, err := o.httpTransport(netdeadline.Transport(a.netTimeout))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTLS, redactURL(repoURL), err)
	}
	client := &auth.Client{Client: &http.Client{Transport: tr}, Cache: auth.NewCache()}
	if c, ok := a.creds.(OCICredentials); ok {
		client.Credential = func(ctx context.Context, _ string) (auth.Credential, error) {
			return c.OCICredential(ctx, repoURL)
		}
	}
	tlsSet := len(o.CABundle) > 0 || len(o.ClientCert) > 0 || o.InsecureSkipTLS
	repo := &remote.Repository{Client: client, Reference: ref, PlainHTTP: isLoopback(ref.Host()) && !tlsSet}
	repo.TagListMaxPages = 100
	return repo, nil
}

func isLoopback(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// resolveOCI resolves a tag, a semver range over the tags or a digest of
// an OCI repository to the manifest's digest. An empty revision or HEAD
// is the tag "latest". An exact tag wins over a range.
func (a *Activities) resolveOCI(ctx context.Context, repoURL, revision string) (ResolveOutput, error) {
	repo, err := a.ociRepository(ctx, repoURL)
	if err != nil {
		return ResolveOutput{}, err
	}
	rev := strings.TrimSpace(revision)
	if rev == "" || rev == "HEAD" {
		rev = "latest"
	}
	if strings.Contains(rev, ":") {
		d, err := digest.Parse(rev)
		if err != nil {
			return ResolveOutput{}, fmt.Errorf("%w: %q is not a digest: %w", ErrRevisionNotFound, rev, err)
		}
		desc, err := repo.Resolve(ctx, d.String())
		if err != nil {
			return ResolveOutput{}, ociError(repoURL, d.String(), err)
		}
		return ResolveOutput{SHA: desc.Digest.String()}, nil
	}
	c, isRange := semverRange(rev)
	if validTag(rev) {
		desc, err := repo.Resolve(ctx, rev)
		if err == nil {
			return ResolveOutput{SHA: desc.Digest.String(), Ref: rev}, nil
		}
		if !isRange || !errors.Is(err, errdef.ErrNotFound) && !isNotFound(err) {
			return ResolveOutput{}, ociError(repoURL, rev, err)
		}
	}
	if !isRange {
		return ResolveOutput{}, fmt.Errorf("%w: %q is neither a tag, a digest nor a semver range", ErrRevisionNotFound, rev)
	}
	tag, err := highestOCITag(ctx, repo, c)
	if err != nil {
		return ResolveOutput{}, ociError(repoURL, rev, err)
	}
	if tag == "" {
		return ResolveOutput{}, fmt.Errorf("%w: no tag of %s satisfies %q", ErrRevisionNotFound, redactURL(repoURL), rev)
	}
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return ResolveOutput{}, ociError(repoURL, tag, err)
	}
	return ResolveOutput{SHA: desc.Digest.String(), Ref: tag}, nil
}

// validTag is the grammar of an OCI tag.
func validTag(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		word := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !word && (i == 0 || r != '.' && r != '-') {
			return false
		}
	}
	return true
}

// highestOCITag lists the tags and returns the highest that is a version
// satisfying c ("" for none). Helm writes a version's "+" as "_".
func highestOCITag(ctx context.Context, repo *remote.Repository, c *semver.Constraints) (string, error) {
	var (
		best    *semver.Version
		bestTag string
	)
	err := repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			v, err := semver.NewVersion(strings.ReplaceAll(t, "_", "+"))
			if err != nil || !c.Check(v) {
				continue
			}
			if best == nil || v.GreaterThan(best) {
				best, bestTag = v, t
			}
		}
		return nil
	})
	return bestTag, err
}

// isNotFound reports a registry's 404 answer.
func isNotFound(err error) bool {
	var er *errcode.ErrorResponse
	return errors.As(err, &er) && er.StatusCode == http.StatusNotFound
}

// ociError classifies a registry error: a missing manifest, a refused
// request and another client error are permanent, the rest retryable.
func ociError(repoURL, ref string, err error) error {
	at := redactURL(repoURL) + "@" + ref
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		switch s := er.StatusCode; {
		case s == http.StatusNotFound:
			return fmt.Errorf("%w: %s: %w", ErrRevisionNotFound, at, err)
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			return fmt.Errorf("%w: %s: the registry refused the request (check the credential registered for it): %w", ErrAuthFailed, at, err)
		case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests:
			return fmt.Errorf("%w: %s: %w", ErrBadArtifact, at, err)
		}
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("%w: %s: %w", ErrRevisionNotFound, at, err)
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%w: %s: the registry wants a credential and none is registered for it", ErrAuthFailed, at)
	}
	if tlsFailure(err) {
		return fmt.Errorf("%w: %s: %w (check the repository's caData and client certificate)", ErrTLS, at, err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", at, ue.Err)
	}
	return fmt.Errorf("%s: %w", at, err)
}

// checkoutOCI unpacks the artifact of manifest digest dgst into the
// checkout directory for it, once.
func (a *Activities) checkoutOCI(ctx context.Context, repoURL, dgst string) (string, error) {
	d, err := digest.Parse(dgst)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a manifest digest: %w", ErrRevisionNotFound, dgst, err)
	}
	return a.checkoutDir(urlKey(repoURL), d.Algorithm().String()+"-"+d.Encoded(), func(mkdir func() (string, error)) error {
		repo, err := a.ociRepository(ctx, repoURL)
		if err != nil {
			return err
		}
		layer, err := a.ociLayer(ctx, repo, repoURL, d)
		if err != nil {
			return err
		}
		rc, err := repo.Fetch(ctx, layer)
		if err != nil {
			return ociError(repoURL, dgst, err)
		}
		defer rc.Close()
		// The verifier checks the size and the digest once the whole
		// layer is read; a mismatch removes what was unpacked.
		vr := content.NewVerifyReader(rc, layer)
		tmp, err := mkdir()
		if err != nil {
			return err
		}
		lim := untar.Options{MaxBytes: a.oci.MaxExtractedBytes, MaxEntries: a.oci.MaxFiles, StripTop: layer.MediaType == MediaTypeHelmChart}
		if err := extractLayer(vr, tmp, lim); err != nil {
			return fmt.Errorf("%s@%s: %w", redactURL(repoURL), dgst, err)
		}
		if _, err := io.Copy(io.Discard, vr); err != nil {
			return fmt.Errorf("%w: %s@%s: %w", ErrBadArtifact, redactURL(repoURL), dgst, err)
		}
		if err := vr.Verify(); err != nil {
			return fmt.Errorf("%w: %s@%s: %w", ErrBadArtifact, redactURL(repoURL), dgst, err)
		}
		return nil
	})
}

// ociLayer fetches manifest d and returns its one layer, checked against
// the accepted media types and the size limit.
func (a *Activities) ociLayer(ctx context.Context, repo *remote.Repository, repoURL string, d digest.Digest) (ocispec.Descriptor, error) {
	at := redactURL(repoURL) + "@" + d.String()
	desc, rc, err := repo.FetchReference(ctx, d.String())
	if err != nil {
		return ocispec.Descriptor{}, ociError(repoURL, d.String(), err)
	}
	defer rc.Close()
	if desc.Size > ociMaxManifestBytes {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s: manifest of %d bytes", ErrBadArtifact, at, desc.Size)
	}
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%s: read manifest: %w", at, err)
	}
	if desc.MediaType == ocispec.MediaTypeImageIndex {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s is an image index; want a manifest of one layer", ErrBadArtifact, at)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s: manifest: %w", ErrBadArtifact, at, err)
	}
	if len(m.Layers) != 1 {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s has %d layers; want one", ErrBadArtifact, at, len(m.Layers))
	}
	layer := m.Layers[0]
	if !slices.Contains(a.oci.LayerMediaTypes, layer.MediaType) {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s: layer media type %q is not one of %s",
			ErrBadArtifact, at, layer.MediaType, strings.Join(a.oci.LayerMediaTypes, ", "))
	}
	if layer.Size > a.oci.MaxArtifactBytes {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s: the layer is %d bytes, over the limit of %d",
			ErrArtifactTooLarge, at, layer.Size, a.oci.MaxArtifactBytes)
	}
	return layer, nil
}

// CheckOCIRepository tests an oci:// repository with creds before it is
// registered: the registry must list its tags.
func CheckOCIRepository(ctx context.Context, repoURL string, creds CredentialResolver, timeout time.Duration) error {
	a := &Activities{creds: creds, netTimeout: timeout, log: slog.New(slog.DiscardHandler)}
	repo, err := a.ociRepository(ctx, repoURL)
	if err != nil {
		return err
	}
	if err := repo.Tags(ctx, "", func([]string) error { return nil }); err != nil {
		return ociError(repoURL, "tags", err)
	}
	return nil
}
