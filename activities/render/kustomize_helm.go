package render

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"
	"sigs.k8s.io/yaml"
)

// helmInflatedFile is the name under which a kustomization's inflated
// charts are laid over its folder, as one more resource.
const helmInflatedFile = ".windlass-helmcharts.yaml"

// kustomize's default release name (what `helm template` prints
// without one) and values merge.
const (
	helmChartDefaultRelease = "release-name"
	valuesMergeOverride     = "override"
	valuesMergeMerge        = "merge"
	valuesMergeReplace      = "replace"
)

// inflateHelmCharts renders the helmCharts of each kustomization in dirs
// with the Helm SDK, in process, and lays the result over the
// kustomization as one more resource, so that krusty never runs helm.
// The objects carry kustomize's helm-generated mark, so its namespace
// transformer leaves them alone as it does with charts it inflates.
func (r *Renderer) inflateHelmCharts(ctx context.Context, fsys *repoFS, dirs []string, o KustomizeOptions) error {
	for _, dir := range dirs {
		name := kustomizationFile(fsys, dir)
		path := filepath.Join(dir, name)
		data, err := fsys.ReadFile(path)
		if err != nil {
			return err
		}
		var k types.Kustomization
		if err := k.Unmarshal(data); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrKustomize, fsys.where(path), err)
		}
		k.FixKustomization()
		if len(k.HelmCharts) == 0 {
			continue
		}
		if !o.EnableHelm {
			return fmt.Errorf("%w: %s: %w", ErrKustomize, fsys.where(path), errHelmDisabled)
		}
		home := types.HelmDefaultHome
		if k.HelmGlobals != nil && k.HelmGlobals.ChartHome != "" {
			home = k.HelmGlobals.ChartHome
		}
		var out bytes.Buffer
		for _, c := range k.HelmCharts {
			docs, err := r.inflateChart(ctx, fsys, dir, home, c, o)
			if err != nil {
				return fmt.Errorf("%s: helmCharts %s: %w", fsys.where(path), c.Name, err)
			}
			out.Write(docs)
		}
		k.HelmCharts, k.HelmGlobals, k.HelmChartInflationGenerator = nil, nil, nil
		k.Resources = append(k.Resources, helmInflatedFile)
		edited, err := yaml.Marshal(&k)
		if err != nil {
			return fmt.Errorf("%w: write edited %s: %w", ErrKustomize, name, err)
		}
		real, err := fsys.resolve(path)
		if err != nil {
			return err
		}
		fsys.overlay[real] = edited
		fsys.overlay[filepath.Join(filepath.Dir(real), helmInflatedFile)] = out.Bytes()
	}
	return nil
}

// inflateChart renders one chart as kustomize's HelmChartInflationGenerator
// does with `helm template`: a chart under chartHome, else pulled from
// its repository (with the credential registered for it); the values
// file (by default the chart's values.yaml) with valuesInline merged in
// as valuesMerge says, then additionalValuesFiles.
func (r *Renderer) inflateChart(ctx context.Context, fsys *repoFS, dir, home string, c types.HelmChart, o KustomizeOptions) ([]byte, error) {
	if c.Name == "" || strings.HasPrefix(c.Name, "-") || strings.HasPrefix(c.ReleaseName, "-") {
		return nil, fmt.Errorf("%w: a chart needs a name, and neither it nor releaseName may start with '-'", ErrKustomize)
	}
	if c.NameTemplate != "" {
		return nil, fmt.Errorf("%w: nameTemplate is not supported; set releaseName", ErrKustomize)
	}
	merge := cmp.Or(c.ValuesMerge, valuesMergeOverride)
	if !slices.Contains([]string{valuesMergeOverride, valuesMergeMerge, valuesMergeReplace}, merge) {
		return nil, fmt.Errorf("%w: valuesMerge must be one of merge, override, replace, not %q", ErrKustomize, c.ValuesMerge)
	}
	if !filepath.IsAbs(home) {
		home = filepath.Join(dir, home)
	}
	if c.Version != "" && c.Repo != "" {
		home = filepath.Join(home, c.Name+"-"+c.Version)
	}
	chartDir := filepath.Join(home, c.Name)
	read := func(p string) ([]byte, error) { return fsys.readUnder(dir, p, o.rootOnly()) }

	var (
		ch  *chart.Chart
		err error
	)
	local := fsys.IsDir(chartDir)
	switch {
	case local:
		ch, err = r.loadLocalChart(ctx, fsys.root, chartDir)
	case c.Repo == "":
		return nil, fmt.Errorf("%w: no repo to pull from, and no chart at %s", ErrKustomize, fsys.where(chartDir))
	case isRemoteRef(c.Repo) && !isHelmRepoURL(c.Repo):
		return nil, fmt.Errorf("%w: repo %q is not an http(s):// or oci:// chart repository", ErrKustomize, c.Repo)
	default:
		version := c.Version
		if version == "" {
			if version, err = r.resolveChartVersion(ctx, c.Repo, c.Name, ""); err != nil {
				return nil, err
			}
		}
		ch, err = r.loadRepoChart(ctx, c.Repo, c.Name, version)
	}
	if err != nil {
		return nil, err
	}

	// The values file: the chart's values.yaml unless another is named.
	var values []byte
	switch {
	case merge == valuesMergeReplace && len(c.ValuesInline) > 0:
		// kustomize reads no values file then.
	case c.ValuesFile != "":
		if values, err = read(filepath.Join(dir, c.ValuesFile)); err != nil {
			return nil, fmt.Errorf("valuesFile: %w", err)
		}
	case local:
		if values, err = read(filepath.Join(chartDir, "values.yaml")); err != nil {
			return nil, fmt.Errorf("values.yaml: %w", err)
		}
	default:
		for _, f := range ch.Raw {
			if f.Name == "values.yaml" {
				values = f.Data
			}
		}
	}
	if len(c.ValuesInline) > 0 {
		if values, err = mergeValuesInline(values, c.ValuesInline, merge); err != nil {
			return nil, err
		}
	}
	vals, err := helmLoadValues("values", values)
	if err != nil {
		return nil, err
	}
	for _, f := range c.AdditionalValuesFiles {
		b, err := read(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("additionalValuesFiles: %w", err)
		}
		m, err := helmLoadValues(f, b)
		if err != nil {
			return nil, err
		}
		vals = loader.MergeMaps(vals, m)
	}

	run := helmRun{
		releaseName: cmp.Or(c.ReleaseName, helmChartDefaultRelease), namespace: cmp.Or(c.Namespace, defaultHelmNamespace),
		includeCRDs: c.IncludeCRDs, skipTests: c.SkipTests, skipHooks: c.SkipHooks,
		kubeVersion: cmp.Or(o.HelmKubeVersion, c.KubeVersion), apiVersions: c.ApiVersions,
	}
	if len(o.HelmAPIVersions) > 0 {
		run.apiVersions = o.HelmAPIVersions
	}
	objs, err := r.helmRender(ctx, ch, vals, run)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, obj := range objs {
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[konfig.HelmGeneratedAnnotation] = "true"
		obj.SetAnnotations(ann)
		b, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes(), nil
}

// mergeValuesInline merges the inline values into the values file as
// kustomize does: override (inline wins), merge (the file wins) or
// replace (the inline values alone).
func mergeValuesInline(file []byte, inline map[string]any, how string) ([]byte, error) {
	if how == valuesMergeReplace {
		return yaml.Marshal(inline)
	}
	if len(bytes.TrimSpace(file)) == 0 {
		file = []byte("{}")
	}
	fileNode, err := kyaml.Parse(string(file))
	if err != nil {
		return nil, fmt.Errorf("%w: values file: %w", ErrHelmValues, err)
	}
	inlineNode, err := kyaml.FromMap(inline)
	if err != nil {
		return nil, fmt.Errorf("%w: valuesInline: %w", ErrHelmValues, err)
	}
	var merged *kyaml.RNode
	if how == valuesMergeOverride {
		merged, err = merge2.Merge(inlineNode, fileNode.Copy(), kyaml.MergeOptions{})
	} else {
		merged, err = merge2.Merge(fileNode, inlineNode.Copy(), kyaml.MergeOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: merge valuesInline: %w", ErrHelmValues, err)
	}
	m, err := merged.Map()
	if err != nil {
		return nil, fmt.Errorf("%w: merged values: %w", ErrHelmValues, err)
	}
	return yaml.Marshal(m)
}
