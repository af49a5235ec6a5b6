package render

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Errors of the Helm tool that retrying cannot fix.
var (
	// ErrChart is a chart that cannot be loaded or templated: a malformed
	// Chart.yaml, a template error (Helm's text names the file and line),
	// a missing or unresolvable dependency.
	ErrChart = failure.Permanent("ChartError", "helm chart error")
	// ErrHelmValues is a values file, inline values or a parameter that
	// Helm cannot parse, or a bad kubeVersion.
	ErrHelmValues = failure.Permanent("HelmValues", "invalid helm values")
)

// defaultHelmNamespace is the release namespace when neither the source nor
// the destination names one (helm's own default).
const defaultHelmNamespace = "default"

// maxReleaseName is Helm's limit on a release name. An application name
// may be longer (a DNS subdomain); such an app must set helm.releaseName.
const maxReleaseName = 53

// renderHelm renders the chart at in.Dir as `helm template --include-crds`
// does (Argo CD's invocation), hooks included.
func (r *Renderer) renderHelm(ctx context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	ch, err := r.loadLocalChart(ctx, in.Root, in.Dir)
	if err != nil {
		return nil, err
	}
	return r.helmTemplate(ctx, in, ch)
}

// renderHelmRepoChart renders a chart from a Helm chart repository
// (source.chart with an HTTP or oci:// repoURL); in.Source.SHA is the
// resolved chart version.
func (r *Renderer) renderHelmRepoChart(ctx context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	if in.Source.SHA == "" {
		return nil, fmt.Errorf("%w: chart %s has no resolved version", ErrBadPath, in.Source.Chart)
	}
	ch, err := r.loadRepoChart(ctx, in.Source.RepoURL, in.Source.Chart, in.Source.SHA)
	if err != nil {
		return nil, err
	}
	return r.helmTemplate(ctx, in, ch)
}

// helmTemplate renders a loaded chart (dependencies in place) with the
// source's Helm options.
func (r *Renderer) helmTemplate(ctx context.Context, in toolInput, ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	h := in.Source.Helm
	if h == nil {
		h = &appspec.Helm{}
	}
	vals, err := helmValues(in, h)
	if err != nil {
		return nil, err
	}
	if h.ReleaseName == "" && len(in.AppName) > maxReleaseName {
		return nil, fmt.Errorf("%w: the application name has %d characters and Helm allows %d in a release name: set helm.releaseName",
			ErrChart, len(in.AppName), maxReleaseName)
	}
	return r.helmRender(ctx, ch, vals, helmRun{
		releaseName: cmp.Or(h.ReleaseName, in.AppName), namespace: cmp.Or(h.Namespace, in.Namespace, defaultHelmNamespace),
		includeCRDs: !h.SkipCrds, skipSchemaValidation: h.SkipSchemaValidation, skipTests: h.SkipTests,
		kubeVersion: h.KubeVersion, apiVersions: h.APIVersions,
	})
}

// helmRun are the options of one `helm template`.
type helmRun struct {
	releaseName, namespace string
	includeCRDs            bool
	skipSchemaValidation   bool
	skipTests, skipHooks   bool
	kubeVersion            string
	apiVersions            []string
}

// helmRender renders a loaded chart with vals as `helm template` does.
func (r *Renderer) helmRender(ctx context.Context, ch *chart.Chart, vals map[string]any, o helmRun) ([]*unstructured.Unstructured, error) {
	switch ch.Metadata.Type {
	case "", "application":
	default:
		return nil, fmt.Errorf("%w: %s charts are not installable", ErrChart, ch.Metadata.Type)
	}
	// A fresh configuration per render: the install action stores its
	// capabilities, fake client and release storage in it.
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(r.helmLogHandler()))
	inst := action.NewInstall(cfg)
	inst.DryRunStrategy = action.DryRunClient
	inst.Replace = true
	inst.ReleaseName = o.releaseName
	inst.Namespace = o.namespace
	inst.IncludeCRDs = o.includeCRDs
	inst.SkipSchemaValidation = o.skipSchemaValidation
	if o.kubeVersion != "" {
		kv, err := common.ParseKubeVersion(o.kubeVersion)
		if err != nil {
			return nil, fmt.Errorf("%w: kubeVersion %q: %w", ErrHelmValues, o.kubeVersion, err)
		}
		inst.KubeVersion = kv
	}
	for _, v := range o.apiVersions {
		// helm's --api-versions also takes comma-separated lists.
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				inst.APIVersions = append(inst.APIVersions, p)
			}
		}
	}

	ri, err := inst.RunWithContext(ctx, ch, vals)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChart, err)
	}
	rel, ok := ri.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("%w: unexpected release type %T", ErrChart, ri)
	}
	return helmObjects(rel, o.skipTests, o.skipHooks)
}

// helmObjects parses a release the way `helm template` prints it: CRDs and
// manifests (rel.Manifest, in install order), then hooks, without test
// hooks when skipTests and without any when skipHooks. Each document is parsed on its own so that the
// manifest size limit applies per document, not to the whole chart.
func helmObjects(rel *release.Release, skipTests, skipHooks bool) ([]*unstructured.Unstructured, error) {
	docs := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []*unstructured.Unstructured
	add := func(name, doc string) error {
		objs, err := manifest.Parse(name, []byte(doc))
		if err != nil {
			return err
		}
		out = append(out, objs...)
		if len(out) > manifest.MaxObjects {
			return fmt.Errorf("%w: more than %d objects", manifest.ErrInvalidManifest, manifest.MaxObjects)
		}
		return nil
	}
	for _, k := range keys {
		if err := add(helmSourceName(docs[k], k), docs[k]); err != nil {
			return nil, err
		}
	}
	for _, hk := range rel.Hooks {
		if skipHooks || skipTests && slices.Contains(hk.Events, release.HookTest) {
			continue
		}
		if err := add(hk.Path, hk.Manifest); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// helmSourceName is the template path in a document's "# Source:" line.
func helmSourceName(doc, fallback string) string {
	for line := range strings.SplitSeq(doc, "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "# Source: "); ok {
			return s
		}
	}
	return fallback
}

// helmLogHandler gives Helm the renderer's logger at warning level and
// above: Helm logs chatty debug lines per render.
func (r *Renderer) helmLogHandler() slog.Handler {
	if r.log == nil {
		return slog.NewTextHandler(io.Discard, nil)
	}
	return helmWarnHandler{r.log.Handler()}
}

type helmWarnHandler struct{ slog.Handler }

func (h helmWarnHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h helmWarnHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return helmWarnHandler{h.Handler.WithAttrs(a)}
}

func (h helmWarnHandler) WithGroup(name string) slog.Handler {
	return helmWarnHandler{h.Handler.WithGroup(name)}
}
