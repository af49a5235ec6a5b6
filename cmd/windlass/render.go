package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
)

const renderUsage = `usage: windlass render [--repo URL [--revision R] | --root DIR] --path P [flags]

Renders an application source offline, with the code workers use, and
prints the manifests as YAML documents. Without --repo, P is relative to
--root (default: the current directory) and the files are read in place.
`

// renderOptions are the flags of `windlass render`.
type renderOptions struct {
	repo, revision, root, path, tool string
	appName, namespace               string
	helmSets, helmSetStrings, values cmdline.StringList
	releaseName                      string
	kustomizeImages                  cmdline.StringList
	jsonnetTLAs, jsonnetExtVars      cmdline.StringList
	jsonnetLibs                      cmdline.StringList
	plugin, pluginConfig             string
}

func parseRenderFlags(args []string, stderr io.Writer) (renderOptions, error) {
	var o renderOptions
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.repo, "repo", "", "Git repository URL (https://, ssh or file://); default: local files under --root")
	fs.StringVar(&o.revision, "revision", "HEAD", "with --repo: branch, tag or commit")
	fs.StringVar(&o.root, "root", ".", "without --repo: the directory --path is relative to")
	fs.StringVar(&o.path, "path", ".", "path of the application inside the repository")
	fs.StringVar(&o.tool, "tool", "", "helm, kustomize, directory, jsonnet or plugin (default: detected as a worker does)")
	fs.StringVar(&o.appName, "app-name", "", "application name (Helm's default release name; default: the path's last element)")
	fs.StringVar(&o.namespace, "namespace", "", "destination namespace (Helm's release namespace)")
	fs.Var(&o.helmSets, "helm-set", "Helm parameter NAME=VALUE (repeatable)")
	fs.Var(&o.helmSetStrings, "helm-set-string", "Helm string parameter NAME=VALUE (repeatable)")
	fs.Var(&o.values, "values", "Helm values file (repeatable): inside the repository it is a value file of the chart; a local file elsewhere is read and passed inline")
	fs.StringVar(&o.releaseName, "release-name", "", "Helm release name")
	fs.Var(&o.kustomizeImages, "kustomize-image", "Kustomize image override, e.g. nginx=nginx:1.27 (repeatable)")
	fs.Var(&o.jsonnetTLAs, "jsonnet-tla", "Jsonnet top-level argument NAME=VALUE (repeatable)")
	fs.Var(&o.jsonnetExtVars, "jsonnet-ext-var", "Jsonnet external variable NAME=VALUE (repeatable)")
	fs.Var(&o.jsonnetLibs, "jsonnet-lib", "Jsonnet library directory, relative to the repository root (repeatable)")
	fs.StringVar(&o.plugin, "plugin", "", "config-management plugin to use (from --plugin-config)")
	fs.StringVar(&o.pluginConfig, "plugin-config", "", "YAML file holding a list of plugin configurations, as the worker's")
	fs.Usage = func() {
		fmt.Fprint(stderr, renderUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, flag.ErrHelp
		}
		return o, cmdline.ErrUsage
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return o, fmt.Errorf("%w: unexpected arguments %s", cmdline.ErrUsage, strings.Join(fs.Args(), " "))
	}
	switch o.tool {
	case "", appspec.ToolHelm, appspec.ToolKustomize, appspec.ToolDirectory, appspec.ToolJsonnet, appspec.ToolPlugin:
	default:
		return o, fmt.Errorf("%w: --tool %q: want helm, kustomize, directory, jsonnet or plugin", cmdline.ErrUsage, o.tool)
	}
	return o, nil
}

// runRender is `windlass render`: an offline preview, like `argocd app
// manifests --local`. It needs no server, Temporal or Redis: it builds a
// render.Renderer with an in-memory cache and either the worker's Git code
// (--repo) or the local directory, and runs Render then Load.
func runRender(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRenderFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return usageError(stderr, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	scratch, err := os.MkdirTemp("", "windlass-render-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)

	src := appspec.Source{RepoURL: o.repo, Path: o.path, TargetRevision: o.revision}
	var (
		git  render.Checkouter
		sha  string
		root string // local files only
	)
	if o.repo != "" {
		acts, err := source.New(filepath.Join(scratch, "git"), source.Credentials{}, log)
		if err != nil {
			return err
		}
		res, err := acts.ResolveRevision(ctx, source.ResolveInput{RepoURL: o.repo, Revision: o.revision})
		if err != nil {
			return fmt.Errorf("render: %w", err)
		}
		git, sha = acts, res.SHA
	} else {
		if root, err = filepath.Abs(o.root); err != nil {
			return err
		}
		if root, err = filepath.EvalSymlinks(root); err != nil {
			return fmt.Errorf("render: --root: %w", err)
		}
		git = localCheckout(root)
		src.RepoURL, src.TargetRevision = "file://"+filepath.ToSlash(root), ""
	}
	if err := o.applyToolFlags(&src, root); err != nil {
		return usageError(stderr, err)
	}
	plugins, err := loadPluginConfig(o.pluginConfig)
	if err != nil {
		return err
	}
	appName := o.appName
	if appName == "" {
		appName = defaultAppName(o.path, root)
	}
	req := render.SingleSource(appName, o.namespace, src, sha)
	req.Tool = o.tool
	r, err := render.NewRenderer(render.Config{Store: render.NewMemoryStore(), Git: git, CacheDir: scratch, Plugins: plugins, Logger: log})
	if err != nil {
		return err
	}
	ref, err := r.Render(ctx, req, true)
	if err != nil {
		return err
	}
	objs, err := r.Load(ctx, ref)
	if err != nil {
		return err
	}
	for i, obj := range objs {
		b, err := yaml.Marshal(obj.Object)
		if err != nil {
			return err
		}
		if i > 0 {
			b = append([]byte("---\n"), b...)
		}
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// usageError prints a usage error's message (main prints none for
// render's usage errors) and returns it.
func usageError(stderr io.Writer, err error) error {
	if errors.Is(err, cmdline.ErrUsage) && err != cmdline.ErrUsage {
		fmt.Fprintln(stderr, "windlass render:", strings.TrimPrefix(err.Error(), cmdline.ErrUsage.Error()+": "))
	}
	return err
}

// localCheckout serves the local directory as every commit's tree.
type localCheckout string

func (l localCheckout) Checkout(context.Context, string, string) (string, error) {
	return string(l), nil
}

// applyToolFlags sets the tool options the flags ask for; root is the
// local repository ("" with --repo).
func (o renderOptions) applyToolFlags(src *appspec.Source, root string) error {
	var used []string
	if len(o.helmSets)+len(o.helmSetStrings)+len(o.values) > 0 || o.releaseName != "" {
		used = append(used, appspec.ToolHelm)
		h := &appspec.Helm{ReleaseName: o.releaseName}
		for _, list := range []struct {
			vals   cmdline.StringList
			force  bool
			option string
		}{{o.helmSets, false, "--helm-set"}, {o.helmSetStrings, true, "--helm-set-string"}} {
			for _, kv := range list.vals {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("%w: %s %q: want NAME=VALUE", cmdline.ErrUsage, list.option, kv)
				}
				h.Parameters = append(h.Parameters, appspec.HelmParameter{Name: k, Value: v, ForceString: list.force})
			}
		}
		if err := o.setValues(h, root); err != nil {
			return err
		}
		src.Helm = h
	}
	if len(o.kustomizeImages) > 0 {
		used = append(used, appspec.ToolKustomize)
		src.Kustomize = &appspec.Kustomize{Images: o.kustomizeImages}
	}
	if len(o.jsonnetTLAs)+len(o.jsonnetExtVars)+len(o.jsonnetLibs) > 0 {
		used = append(used, appspec.ToolJsonnet)
		j := &appspec.Jsonnet{Libs: o.jsonnetLibs}
		for _, list := range []struct {
			vals   cmdline.StringList
			dst    *[]appspec.JsonnetVar
			option string
		}{{o.jsonnetTLAs, &j.TLAs, "--jsonnet-tla"}, {o.jsonnetExtVars, &j.ExtVars, "--jsonnet-ext-var"}} {
			for _, kv := range list.vals {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("%w: %s %q: want NAME=VALUE", cmdline.ErrUsage, list.option, kv)
				}
				*list.dst = append(*list.dst, appspec.JsonnetVar{Name: k, Value: v})
			}
		}
		src.Directory = &appspec.Directory{Jsonnet: j}
	}
	if o.plugin != "" {
		used = append(used, appspec.ToolPlugin)
		src.Plugin = &appspec.Plugin{Name: o.plugin}
	}
	switch {
	case len(used) > 1:
		return fmt.Errorf("%w: flags of several tools given (%s)", cmdline.ErrUsage, strings.Join(used, ", "))
	case len(used) == 1 && o.tool != "" && o.tool != used[0]:
		return fmt.Errorf("%w: --tool %s with %s flags", cmdline.ErrUsage, o.tool, used[0])
	}
	return nil
}

// setValues maps --values: a file inside the local repository becomes a
// value file relative to the chart (the worker reads it from the
// checkout); any other existing local file is read and merged into the
// inline values (later files win); with --repo, a path that is not a
// local file is a value file of the chart in the repository. Inline
// values apply after value files, as in Argo CD.
func (o renderOptions) setValues(h *appspec.Helm, root string) error {
	var inline map[string]any
	for _, v := range o.values {
		abs, err := filepath.Abs(v)
		if err != nil {
			return err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		_, statErr := os.Stat(abs)
		switch {
		case statErr == nil && root != "" && insideDir(abs, root):
			chart := filepath.Join(root, filepath.FromSlash(o.path))
			rel, err := filepath.Rel(chart, abs)
			if err != nil {
				return err
			}
			h.ValueFiles = append(h.ValueFiles, filepath.ToSlash(rel))
		case statErr == nil:
			b, err := os.ReadFile(abs)
			if err != nil {
				return err
			}
			var m map[string]any
			if err := yaml.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("--values %s: %w", v, err)
			}
			inline = mergeValues(inline, m)
		case root == "":
			h.ValueFiles = append(h.ValueFiles, filepath.ToSlash(v))
		default:
			return fmt.Errorf("--values %s: %w", v, statErr)
		}
	}
	if inline != nil {
		h.ValuesObject = inline
	}
	return nil
}

func insideDir(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// mergeValues merges src into dst as Helm merges values files: maps
// recursively, anything else replaced.
func mergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// loadPluginConfig reads a YAML list of plugin configurations.
func loadPluginConfig(file string) ([]render.PluginConfig, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var plugins []render.PluginConfig
	if err := yaml.UnmarshalStrict(b, &plugins); err != nil {
		return nil, fmt.Errorf("--plugin-config %s: %w", file, err)
	}
	if err := render.ValidatePlugins(plugins); err != nil {
		return nil, fmt.Errorf("--plugin-config %s: %w", file, err)
	}
	return plugins, nil
}

// defaultAppName is the last element of the app's path (or of the local
// root), when it is a valid application name, else "app".
func defaultAppName(path, root string) string {
	name := filepath.Base(filepath.Clean(filepath.FromSlash(path)))
	if name == "." && root != "" {
		name = filepath.Base(root)
	}
	name = strings.ToLower(name)
	if appspec.ValidateAppName(name) != nil {
		return "app"
	}
	return name
}
