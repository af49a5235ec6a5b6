//lint:file-ignore SA1019 users' kustomization files still use the deprecated fields, so Windlass reads them

package render

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/pkg/util"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Kustomize errors that retrying cannot fix.
var (
	ErrKustomize  = failure.Permanent("KustomizeFailed", "kustomize build failed")
	ErrRemoteBase = failure.Permanent("RemoteBaseNotAllowed", "remote kustomize bases are not allowed")
)

// renderKustomize builds a kustomization in-process (krusty), with the
// spec's overrides applied the way Argo CD applies them (it runs
// `kustomize edit set|add ...` on a copy of the checkout): here the app's
// kustomization file is edited in memory and laid over the read-only
// checkout, so the shared checkout is never written.
func (r *Renderer) renderKustomize(ctx context.Context, in toolInput) ([]*unstructured.Unstructured, error) {
	opts := appspec.Kustomize{}
	if in.Source.Kustomize != nil {
		opts = *in.Source.Kustomize
	}
	m, err := r.kustomizeBuild(ctx, in, opts)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, res := range m.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrKustomize, res.CurId(), err)
		}
		objs, err := manifest.Parse("kustomize output "+res.CurId().String(), y)
		if err != nil {
			return nil, err
		}
		if out, err = addObjects(out, objs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kustomizeBuild is `kustomize build in.Dir` with the worker's build
// options, after Argo CD's edits, with loads confined to the checkout,
// remote bases refused unless allowed, and helmCharts inflated in
// process.
func (r *Renderer) kustomizeBuild(ctx context.Context, in toolInput, opts appspec.Kustomize) (resmap.ResMap, error) {
	fsys, err := newRepoFS(in.Root, in.Limit, opts.AllowRemoteBases)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	if hasOverrides(opts) {
		if err := applyOverrides(fsys, in, opts); err != nil {
			if v := fsys.violation(); v != nil {
				return nil, v
			}
			return nil, err
		}
	}
	scan := kustomizationScan{fsys: fsys, allowRemote: opts.AllowRemoteBases, seen: map[string]bool{}}
	if err := scan.walk(in.Dir); err != nil {
		return nil, err
	}
	if err := r.inflateHelmCharts(ctx, fsys, scan.helm, r.kustomize); err != nil {
		if v := fsys.violation(); v != nil {
			return nil, v
		}
		return nil, err
	}
	// kustomize keeps the OpenAPI schema in a global: a build that sets
	// its own runs alone and resets it afterwards.
	if scan.openAPI {
		openAPIMu.Lock()
		defer func() {
			openapi.ResetOpenAPI()
			openAPIMu.Unlock()
		}()
	} else {
		openAPIMu.RLock()
		defer openAPIMu.RUnlock()
	}
	k := krusty.MakeKustomizer(r.kustomize.krusty())
	m, err := k.Run(fsys, in.Dir)
	if v := fsys.violation(); v != nil {
		return nil, v
	}
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), fsys.root+string(filepath.Separator), "")
		if opts.AllowRemoteBases {
			// A remote base may fail for a passing reason: retryable.
			return nil, fmt.Errorf("kustomize build: %s", msg)
		}
		return nil, fmt.Errorf("%w: %s", ErrKustomize, msg)
	}
	return m, nil
}

func hasOverrides(o appspec.Kustomize) bool {
	return o.NamePrefix != "" || o.NameSuffix != "" || len(o.Images) > 0 || len(o.Replicas) > 0 ||
		len(o.CommonLabels) > 0 || len(o.CommonAnnotations) > 0 || o.Namespace != "" ||
		len(o.Patches) > 0 || len(o.Components) > 0
}

// kustomizationFile names the kustomization file of dir, or "".
func kustomizationFile(fsys *repoFS, dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if fsys.Exists(filepath.Join(dir, n)) {
			return n
		}
	}
	return ""
}

// applyOverrides edits the app's kustomization as Argo CD's sequence of
// `kustomize edit` commands would, and lays the result over the file.
func applyOverrides(fsys *repoFS, in toolInput, o appspec.Kustomize) error {
	name := kustomizationFile(fsys, in.Dir)
	if name == "" {
		return fmt.Errorf("%w: kustomize overrides need a kustomization file in %q", ErrKustomize, in.Source.Path)
	}
	path, err := fsys.resolve(filepath.Join(in.Dir, name))
	if err != nil {
		return err
	}
	data, err := fsys.ReadFile(path)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrKustomize, name, err)
	}
	k.FixKustomization()
	env := newBuildEnv(in)
	if o.NamePrefix != "" {
		k.NamePrefix = o.NamePrefix
	}
	if o.NameSuffix != "" {
		k.NameSuffix = o.NameSuffix
	}
	if len(o.Images) > 0 {
		if err := setImages(&k, o.Images, env); err != nil {
			return err
		}
	}
	setReplicas(&k, o.Replicas)
	if len(o.CommonLabels) > 0 {
		if err := addLabels(&k, o, env); err != nil {
			return err
		}
	}
	if len(o.CommonAnnotations) > 0 {
		vals := o.CommonAnnotations
		if o.CommonAnnotationsEnvsubst {
			vals = substAll(vals, env)
		}
		if k.CommonAnnotations == nil {
			k.CommonAnnotations = map[string]string{}
		}
		if err := addMetadata(k.CommonAnnotations, vals, o.ForceCommonAnnotations, "annotation"); err != nil {
			return err
		}
	}
	if o.Namespace != "" {
		k.Namespace = o.Namespace
	}
	for _, p := range o.Patches {
		patch, err := kustomizePatch(p)
		if err != nil {
			return err
		}
		k.Patches = append(k.Patches, patch)
	}
	if err := addComponents(fsys, in, &k, o); err != nil {
		return err
	}
	edited, err := yaml.Marshal(&k)
	if err != nil {
		return fmt.Errorf("%w: write edited %s: %w", ErrKustomize, name, err)
	}
	fsys.overlay[path] = edited
	return nil
}

// parseImage reads an override the way `kustomize edit set image` does:
// [name=]newName[:tag][@digest], or name[:tag][@digest]. A '*' as new
// name, tag or digest keeps the kustomization's value.
func parseImage(s string) (types.Image, error) {
	key, value, renamed := strings.Cut(s, "=")
	if !renamed {
		value = s
	}
	name, tag, digest := util.SplitImageName(value)
	if name == s {
		return types.Image{}, fmt.Errorf("%w: image override %q: use [name=]newName[:tag][@digest] or name[:tag][@digest]", ErrKustomize, s)
	}
	img := types.Image{Name: name, NewTag: tag, Digest: digest}
	if renamed {
		img.Name, img.NewName = key, name
	}
	return img, nil
}

// setImages is `kustomize edit set image`: overrides replace the entry of
// the same name (keeping fields given as '*'), and the list is sorted.
func setImages(k *types.Kustomization, overrides []string, env buildEnv) error {
	byName := map[string]types.Image{}
	for _, s := range overrides {
		img, err := parseImage(env.subst(s))
		if err != nil {
			return err
		}
		byName[img.Name] = img
	}
	for _, old := range k.Images {
		img, ok := byName[old.Name]
		if !ok {
			byName[old.Name] = old
			continue
		}
		keep(&img.NewName, old.NewName)
		keep(&img.NewTag, old.NewTag)
		keep(&img.Digest, old.Digest)
		byName[old.Name] = img
	}
	k.Images = k.Images[:0]
	for _, img := range byName {
		keep(&img.NewName, "")
		keep(&img.NewTag, "")
		keep(&img.Digest, "")
		k.Images = append(k.Images, img)
	}
	sort.Slice(k.Images, func(i, j int) bool { return k.Images[i].Name < k.Images[j].Name })
	return nil
}

// keep replaces a '*' with old.
func keep(v *string, old string) {
	if *v == "*" {
		*v = old
	}
}

// setReplicas is `kustomize edit set replicas`: replace by name, sorted.
func setReplicas(k *types.Kustomization, overrides []appspec.KustomizeReplica) {
	if len(overrides) == 0 {
		return
	}
	byName := map[string]types.Replica{}
	for _, r := range k.Replicas {
		byName[r.Name] = r
	}
	for _, r := range overrides {
		byName[r.Name] = types.Replica{Name: r.Name, Count: r.Count}
	}
	k.Replicas = k.Replicas[:0]
	for _, r := range byName {
		k.Replicas = append(k.Replicas, r)
	}
	sort.Slice(k.Replicas, func(i, j int) bool { return k.Replicas[i].Name < k.Replicas[j].Name })
}

// addLabels is `kustomize edit add label [--force] [--without-selector
// [--include-templates]]`, values expanded from the build environment.
func addLabels(k *types.Kustomization, o appspec.Kustomize, env buildEnv) error {
	vals := substAll(o.CommonLabels, env)
	if o.LabelWithoutSelector {
		k.Labels = append(k.Labels, types.Label{Pairs: map[string]string{}, IncludeTemplates: o.LabelIncludeTemplates})
		return addMetadata(k.Labels[len(k.Labels)-1].Pairs, vals, o.ForceCommonLabels, "label")
	}
	if k.CommonLabels == nil {
		k.CommonLabels = map[string]string{}
	}
	return addMetadata(k.CommonLabels, vals, o.ForceCommonLabels, "label")
}

func addMetadata(dst, vals map[string]string, force bool, kind string) error {
	keys := make([]string, 0, len(vals))
	for key := range vals {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if _, ok := dst[key]; ok && !force {
			return fmt.Errorf("%w: %s %s is already in the kustomization file (set force to override it)", ErrKustomize, kind, key)
		}
		dst[key] = vals[key]
	}
	return nil
}

func substAll(m map[string]string, env buildEnv) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = env.subst(v)
	}
	return out
}

func kustomizePatch(p appspec.KustomizePatch) (types.Patch, error) {
	out := types.Patch{Path: p.Path, Patch: p.Patch}
	if len(p.Options) > 0 {
		out.Options = &types.PatchArgs{}
		for k, v := range p.Options {
			switch k {
			case "allowNameChange":
				out.Options.AllowNameChange = v
			case "allowKindChange":
				out.Options.AllowKindChange = v
			default:
				return out, fmt.Errorf("%w: unknown patch option %q (allowNameChange, allowKindChange)", ErrKustomize, k)
			}
		}
	}
	if t := p.Target; t != nil {
		out.Target = &types.Selector{AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector}
		out.Target.Group, out.Target.Version, out.Target.Kind = t.Group, t.Version, t.Kind
		out.Target.Name, out.Target.Namespace = t.Name, t.Namespace
	}
	return out, nil
}

// addComponents is `kustomize edit add component`: each entry is a glob
// relative to the app directory that must match (unless missing ones are
// ignored); remote entries are left to the remote check.
func addComponents(fsys *repoFS, in toolInput, k *types.Kustomization, o appspec.Kustomize) error {
	dir := in.Dir
	for _, c := range o.Components {
		found := []string{c}
		if !isRemoteRef(c) {
			matches, err := fsys.Glob(filepath.Join(dir, filepath.FromSlash(c)))
			if err != nil {
				return fmt.Errorf("%w: component %q: %w", ErrKustomize, c, err)
			}
			if v := fsys.violation(); v != nil {
				return v
			}
			found = found[:0]
			for _, m := range matches {
				rel, err := filepath.Rel(dir, m)
				if err != nil {
					return err
				}
				found = append(found, filepath.ToSlash(rel))
			}
			if len(found) == 0 && !o.IgnoreMissingComponents {
				return fmt.Errorf("%w: component %q not found (relative to %q)", ErrKustomize, c, in.Source.Path)
			}
		}
		for _, f := range found {
			if !contains(k.Components, f) {
				k.Components = append(k.Components, f)
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// scpURL matches git's scp-like syntax, user@host:path.
var scpURL = regexp.MustCompile(`^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:`)

// isRemoteRef reports whether kustomize would fetch ref over the network
// (or clone it with git): a URL, an scp-like git address or a github.com
// shorthand.
func isRemoteRef(ref string) bool {
	s := strings.TrimSpace(ref)
	if len(s) >= 5 && strings.EqualFold(s[:5], "git::") {
		s = s[5:]
	}
	lower := strings.ToLower(s)
	return strings.Contains(lower, "://") || strings.HasPrefix(lower, "github.com/") ||
		strings.HasPrefix(lower, "github.com:") || scpURL.MatchString(s)
}

// openAPIMu orders builds around kustomize's global OpenAPI schema.
var openAPIMu sync.RWMutex

// kustomizationScan walks the kustomizations reachable from a directory
// before the build. It refuses remote references unless allowed (file://
// always: it would clone from the worker's disk), since kustomize fetches
// them before it reads through our file system, and notes whether any
// kustomization sets its own OpenAPI schema.
type kustomizationScan struct {
	fsys        *repoFS
	allowRemote bool
	seen        map[string]bool
	openAPI     bool
	// helm lists the folders whose kustomization has helmCharts.
	helm []string
}

func (s *kustomizationScan) walk(dir string) error {
	real, err := s.fsys.resolve(dir)
	if err != nil || s.seen[real] {
		return err
	}
	s.seen[real] = true
	name := kustomizationFile(s.fsys, real)
	if name == "" {
		return nil
	}
	data, err := s.fsys.ReadFile(filepath.Join(real, name))
	if err != nil {
		return err
	}
	var k types.Kustomization
	if k.Unmarshal(data) != nil {
		return nil // kustomize reports it
	}
	k.FixKustomization()
	s.openAPI = s.openAPI || len(k.OpenAPI) > 0
	if len(k.HelmCharts) > 0 {
		s.helm = append(s.helm, real)
	}
	where := real
	if r, err := filepath.Rel(s.fsys.root, real); err == nil {
		where = filepath.ToSlash(r)
	}
	for _, ref := range kustomizationRefs(&k) {
		if ref == "" || strings.Contains(ref, "\n") {
			continue // inline content
		}
		if isRemoteRef(ref) {
			if strings.HasPrefix(strings.ToLower(strings.TrimPrefix(ref, "git::")), "file://") {
				return fmt.Errorf("%w: %s/%s refers to %q: file:// bases are never allowed", ErrBadPath, where, name, ref)
			}
			if !s.allowRemote {
				return fmt.Errorf("%w: %s/%s refers to %q (set kustomize.allowRemoteBases to allow it)", ErrRemoteBase, where, name, ref)
			}
			continue
		}
		if sub := filepath.Join(real, filepath.FromSlash(ref)); s.fsys.IsDir(sub) {
			if err := s.walk(sub); err != nil {
				return err
			}
		}
	}
	return s.fsys.violation()
}

// kustomizationRefs lists every reference to a file, directory or URL a
// kustomization may load.
func kustomizationRefs(k *types.Kustomization) []string {
	refs := append([]string{}, k.Resources...)
	refs = append(refs, k.Components...)
	refs = append(refs, k.Crds...)
	refs = append(refs, k.Configurations...)
	refs = append(refs, k.Generators...)
	refs = append(refs, k.Transformers...)
	refs = append(refs, k.Validators...)
	if p := k.OpenAPI["path"]; p != "" {
		refs = append(refs, p)
	}
	for _, p := range k.PatchesStrategicMerge {
		refs = append(refs, string(p))
	}
	for _, p := range append(append([]types.Patch{}, k.Patches...), k.PatchesJson6902...) {
		refs = append(refs, p.Path)
	}
	for _, r := range k.Replacements {
		refs = append(refs, r.Path)
	}
	gens := append(append([]types.ConfigMapArgs{}, k.ConfigMapGenerator...), secretArgs(k.SecretGenerator)...)
	for _, g := range gens {
		for _, f := range g.FileSources {
			if _, after, ok := strings.Cut(f, "="); ok {
				f = after
			}
			refs = append(refs, f)
		}
		refs = append(refs, g.EnvSources...)
	}
	return refs
}

func secretArgs(s []types.SecretArgs) []types.ConfigMapArgs {
	out := make([]types.ConfigMapArgs, len(s))
	for i := range s {
		out[i] = types.ConfigMapArgs{GeneratorArgs: s[i].GeneratorArgs}
	}
	return out
}
