package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/netdeadline"
	"github.com/windlass-cd/windlass/internal/repocred"
)

// ResolveChartName is the activity that resolves a chart version: a wire
// contract, never rename.
const ResolveChartName = "render.ResolveChart"

// Errors of Helm chart repositories that retrying cannot fix. Anything else
// (an unreachable repository, a 5xx answer) is retryable.
var (
	ErrChartNotFound = failure.Permanent("ChartNotFound", "chart or chart version not found")
	ErrChartRepo     = failure.Permanent("ChartRepoError", "helm chart repository error")
)

// Limits on what a chart repository may send.
const (
	helmMaxIndexBytes = 256 << 20
	helmMaxChartBytes = 100 << 20
)

// helmTransports holds one transport per net timeout (Config.NetTimeout),
// so that connections to a repository are reused between renders.
var helmTransports sync.Map // time.Duration → *http.Transport

// helmTransport bounds the silence of chart repositories and registries
// by timeout (see netdeadline): a large chart that keeps downloading is
// never cut off; the render's context and limits bound the whole.
func helmTransport(timeout time.Duration) *http.Transport {
	if t, ok := helmTransports.Load(timeout); ok {
		return t.(*http.Transport)
	}
	t, _ := helmTransports.LoadOrStore(timeout, netdeadline.Transport(timeout))
	return t.(*http.Transport)
}

// ResolveChartInput is the input of the ResolveChart activity.
type ResolveChartInput struct {
	RepoURL string `json:"repoURL"`
	Chart   string `json:"chart"`
	// Version is an exact version or a semver range; empty, * or HEAD
	// means the latest version that is not a pre-release.
	Version string `json:"version,omitempty"`
}

// ResolveChartOutput is the output of the ResolveChart activity.
type ResolveChartOutput struct {
	Version string `json:"version"`
}

// ResolveChart resolves a chart's version against its repository.
func (a *Activities) ResolveChart(ctx context.Context, in ResolveChartInput) (ResolveChartOutput, error) {
	v, err := a.r.ResolveChartVersion(ctx, in.RepoURL, in.Chart, in.Version)
	return ResolveChartOutput{Version: v}, failure.Activity(err)
}

// ResolveChartVersion resolves constraint (an exact version or a
// Masterminds semver range; empty, * or HEAD means the latest version that
// is not a pre-release) against the index of an HTTP chart repository or the tags
// of an oci:// repository, with the repository's credential.
func (r *Renderer) ResolveChartVersion(ctx context.Context, repoURL, chartName, constraint string) (v string, err error) {
	err = r.retryRefused(ctx, func() error {
		v, err = r.resolveChartVersion(ctx, repoURL, chartName, constraint)
		return err
	})
	return v, err
}

func (r *Renderer) resolveChartVersion(ctx context.Context, repoURL, chartName, constraint string) (string, error) {
	switch constraint = strings.TrimSpace(constraint); constraint {
	case "*", "HEAD": // HEAD: appspec.Source.Revision() of an empty targetRevision
		constraint = ""
	}
	if err := checkHelmChartRef(repoURL, chartName); err != nil {
		return "", err
	}
	if isOCIRepo(repoURL) {
		c, err := r.helmRegistryClient(ctx, repoURL)
		if err != nil {
			return "", err
		}
		ref := ociChartRef(repoURL, chartName)
		tags, err := c.Tags(ref)
		if err != nil {
			return "", helmOCIError(ref, err, c.cred)
		}
		v, err := registry.GetTagMatchingVersionOrConstraint(tags, constraint)
		if err != nil {
			return "", fmt.Errorf("%w: %s %q: %w", ErrChartNotFound, ref, constraint, err)
		}
		return v, nil
	}
	idx, err := r.fetchHelmIndex(ctx, repoURL)
	if err != nil {
		return "", err
	}
	cv, err := idx.Get(chartName, constraint)
	if err != nil {
		return "", fmt.Errorf("%w: chart %s %q in %s: %w", ErrChartNotFound, chartName, constraint, repoURL, err)
	}
	return cv.Version, nil
}

// loadRepoChart loads version of chartName from the chart cache (filling it
// from the repository) and fills in dependencies its charts/ lacks.
func (r *Renderer) loadRepoChart(ctx context.Context, repoURL, chartName, version string) (*chart.Chart, error) {
	if err := checkHelmChartRef(repoURL, chartName); err != nil {
		return nil, err
	}
	ch, err := r.loadRepoChartRaw(ctx, repoURL, chartName, version)
	if err != nil {
		return nil, err
	}
	if err := r.resolveDependencies(ctx, ch, nil, "", 0); err != nil {
		return nil, err
	}
	return ch, nil
}

func (r *Renderer) loadRepoChartRaw(ctx context.Context, repoURL, chartName, version string) (*chart.Chart, error) {
	p, err := r.cachedChart(ctx, repoURL, chartName, version)
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%w: load %s %s from %s: %w", ErrChart, chartName, version, repoURL, err)
	}
	return ch, nil
}

// cachedChart returns the path of the chart archive in the cache under
// r.cacheDir, keyed by repository, chart and version, downloading it first
// when it is not there. Archives are written to a temporary name and
// renamed, so concurrent renders never see half a file.
func (r *Renderer) cachedChart(ctx context.Context, repoURL, chartName, version string) (string, error) {
	if r.cacheDir == "" {
		return "", errors.New("render: a cache directory is required for charts from Helm repositories")
	}
	dir := filepath.Join(r.cacheDir, "helm", "charts")
	sum := sha256.Sum256([]byte(repoURL + "\x00" + chartName + "\x00" + version))
	p := filepath.Join(dir, helmSafeName(chartName)+"-"+helmSafeName(version)+"-"+hex.EncodeToString(sum[:8])+".tgz")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p, nil
	}
	var data []byte
	var err error
	err = r.retryRefused(ctx, func() error {
		if isOCIRepo(repoURL) {
			data, err = r.pullOCIChart(ctx, repoURL, chartName, version)
		} else {
			data, err = r.downloadHTTPChart(ctx, repoURL, chartName, version)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	if err := os.Rename(f.Name(), p); err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return p, nil
}

// downloadHTTPChart downloads an exact chart version named by the
// repository's index and checks the index's digest when it has one.
func (r *Renderer) downloadHTTPChart(ctx context.Context, repoURL, chartName, version string) ([]byte, error) {
	idx, err := r.fetchHelmIndex(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	var cv *repo.ChartVersion
	for _, v := range idx.Entries[chartName] {
		if v != nil && v.Metadata != nil && v.Version == version {
			cv = v
			break
		}
	}
	if cv == nil {
		return nil, fmt.Errorf("%w: chart %s version %s is not in %s", ErrChartNotFound, chartName, version, repoURL)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("%w: chart %s version %s has no URL in %s", ErrChartRepo, chartName, version, repoURL)
	}
	u, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChartRepo, err)
	}
	data, err := r.helmGet(ctx, repoURL, u, helmMaxChartBytes)
	if err != nil {
		return nil, err
	}
	if want := strings.TrimPrefix(cv.Digest, "sha256:"); want != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, want) {
			// Possibly an index and archive caught mid-update: retryable.
			return nil, fmt.Errorf("chart %s %s from %s: digest sha256:%s does not match the index's %s", chartName, version, u, got, cv.Digest)
		}
	}
	return data, nil
}

// fetchHelmIndex downloads and parses a repository's index.yaml.
func (r *Renderer) fetchHelmIndex(ctx context.Context, repoURL string) (*repo.IndexFile, error) {
	u, err := url.Parse(repoURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadPath, repoURL, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/index.yaml"
	u.RawPath = ""
	data, err := r.helmGet(ctx, repoURL, u.String(), helmMaxIndexBytes)
	if err != nil {
		return nil, err
	}
	// Helm's index loader reads files: give it a temporary one.
	tmpDir := ""
	if r.cacheDir != "" {
		tmpDir = filepath.Join(r.cacheDir, "helm", "tmp")
		if err := os.MkdirAll(tmpDir, 0o755); err != nil {
			return nil, err
		}
	}
	f, err := os.CreateTemp(tmpDir, "index-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		return nil, err
	}
	idx, err := repo.LoadIndexFile(f.Name())
	if err != nil {
		return nil, fmt.Errorf("%w: index of %s: %w", ErrChartRepo, repoURL, err)
	}
	return idx, nil
}

// helmGet fetches u, a file of the repository repoURL, with the
// repository's credential. Answers that retrying will not change (4xx
// other than 408 and 429) are permanent; network errors and other answers
// are not.
func (r *Renderer) helmGet(ctx context.Context, repoURL, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	req.Header.Set("User-Agent", "windlass (Helm/v4)")
	cred, err := r.helmCredential(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	sent := sendsCredential(cred, repoURL, u)
	if sent {
		cred.Authorize(req)
	}
	tr, err := r.helmCredTransport(cred)
	if err != nil {
		return nil, err
	}
	// Redirects keep the credential only on the repository's host.
	client := &http.Client{Transport: tr, CheckRedirect: func(next *http.Request, _ []*http.Request) error {
		if !sendsCredential(cred, repoURL, next.URL.String()) {
			next.Header.Del("Authorization")
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		if certError(err) {
			return nil, fmt.Errorf("%w: %w: get %s: %w (check the repository's caData and client certificate)", ErrChartRepo, errRefused, u, err)
		}
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch s := resp.StatusCode; {
	case s == http.StatusOK:
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return nil, fmt.Errorf("%w: %w: get %s: %s (%s)", ErrChartRepo, errRefused, u, resp.Status, refusedHint(cred, sent))
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w: get %s: %s", ErrChartRepo, u, resp.Status)
	default:
		return nil, fmt.Errorf("get %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrChartRepo, u, limit)
	}
	return data, nil
}

// pullOCIChart pulls a chart from an OCI registry; the registry client
// checks the digests of what it pulls.
func (r *Renderer) pullOCIChart(ctx context.Context, repoURL, chartName, version string) ([]byte, error) {
	c, err := r.helmRegistryClient(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	// OCI tags cannot hold "+": Helm writes "_" instead.
	ref := ociChartRef(repoURL, chartName) + ":" + strings.ReplaceAll(version, "+", "_")
	res, err := c.Pull(ref)
	if err != nil {
		return nil, helmOCIError(ref, err, c.cred)
	}
	if res.Chart == nil || len(res.Chart.Data) == 0 {
		return nil, fmt.Errorf("%w: %s has no chart layer", ErrChartRepo, ref)
	}
	if len(res.Chart.Data) > helmMaxChartBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrChartRepo, ref, helmMaxChartBytes)
	}
	return res.Chart.Data, nil
}

// registryClient is a Helm registry client and the credential it logs in
// with.
type registryClient struct {
	*registry.Client
	cred *repocred.Credential
}

// helmRegistryClient makes a registry client, logged in as `helm registry
// login` would be with the repository's credential (anonymous without
// one), whose requests end with ctx. Registries on the loopback interface
// are spoken to over plain HTTP unless the credential sets TLS, as Docker
// does.
func (r *Renderer) helmRegistryClient(ctx context.Context, repoURL string) (registryClient, error) {
	cred, err := r.helmCredential(ctx, repoURL)
	if err != nil {
		return registryClient{}, err
	}
	tr, err := r.helmCredTransport(cred)
	if err != nil {
		return registryClient{}, err
	}
	hc := &http.Client{Transport: ctxTransport{ctx: ctx, base: tr}}
	credDir := r.cacheDir
	if credDir == "" {
		credDir = os.TempDir()
	}
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptAuthorizer(auth.Client{Client: hc, Cache: auth.NewCache(), Credential: registryCredential(cred, repoURL)}),
		// Never read the worker's own Helm login.
		registry.ClientOptCredentialsFile(filepath.Join(credDir, "helm", "registry-config.json")),
	}
	if u, err := url.Parse(repoURL); err == nil && isLoopbackHost(u.Hostname()) && (cred == nil || (cred.CAData == "" && cred.TLSClientCertData == "" && !cred.Insecure)) {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return registryClient{}, fmt.Errorf("registry client: %w", err)
	}
	return registryClient{Client: c, cred: cred}, nil
}

// helmOCIError classifies a registry error: not found and refused requests
// are permanent, the rest retryable.
func helmOCIError(ref string, err error, cred *repocred.Credential) error {
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		switch s := er.StatusCode; {
		case s == http.StatusNotFound:
			return fmt.Errorf("%w: %s: %w", ErrChartNotFound, ref, err)
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			return fmt.Errorf("%w: %w: %s: %w (%s)", ErrChartRepo, errRefused, ref, err, refusedHint(cred, true))
		case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests:
			return fmt.Errorf("%w: %s: %w", ErrChartRepo, ref, err)
		}
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%w: %w: %s: %w (%s)", ErrChartRepo, errRefused, ref, err, refusedHint(cred, true))
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("%w: %s: %w", ErrChartNotFound, ref, err)
	}
	return fmt.Errorf("%s: %w", ref, err)
}

// ctxTransport ends each request, and the reading of its answer, when ctx
// ends: Helm's registry client takes no context of its own.
type ctxTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (t ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
	release := func() { stop(); cancel(nil) }
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody releases its request's context when closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func isOCIRepo(u string) bool { return strings.HasPrefix(u, "oci://") }

func isHelmRepoURL(u string) bool {
	return isOCIRepo(u) || strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// ociChartRef is the registry reference of a chart without its tag.
func ociChartRef(repoURL, chartName string) string {
	return strings.TrimSuffix(strings.TrimPrefix(repoURL, "oci://"), "/") + "/" + chartName
}

func checkHelmChartRef(repoURL, chartName string) error {
	if !isHelmRepoURL(repoURL) {
		return fmt.Errorf("%w: %q is not an http(s):// or oci:// Helm repository", ErrBadPath, repoURL)
	}
	if chartName == "" || strings.Contains(chartName, "..") || strings.ContainsAny(chartName, ":@?#\\ ") {
		return fmt.Errorf("%w: bad chart name %q", ErrBadPath, chartName)
	}
	return nil
}

// helmSafeName keeps a name readable in a file name.
func helmSafeName(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			return c
		}
		return '_'
	}, s)
}
