package render

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
)

// KustomizeOptions are the worker's `kustomize build` options, as Argo
// CD's kustomize.buildOptions sets them for every build: only those that
// map to an in-process build.
type KustomizeOptions struct {
	// EnableHelm inflates helmCharts with the Helm SDK (--enable-helm).
	EnableHelm bool `json:"enableHelm,omitempty"`
	// LoadRestrictor is LoadRestrictionsRootOnly (the default: files
	// under the kustomization's folder) or LoadRestrictionsNone
	// (anywhere in the repository).
	LoadRestrictor string `json:"loadRestrictor,omitempty"`
	// Reorder is legacy or none (--reorder; empty: kustomize's default).
	Reorder string `json:"reorder,omitempty"`
	// HelmKubeVersion and HelmAPIVersions replace every chart's
	// kubeVersion and apiVersions (--helm-kube-version,
	// --helm-api-versions).
	HelmKubeVersion string   `json:"helmKubeVersion,omitempty"`
	HelmAPIVersions []string `json:"helmAPIVersions,omitempty"`
}

// refusedKustomizeOptions are `kustomize build` flags that do not map to
// an in-process build, with why.
var refusedKustomizeOptions = map[string]string{
	"--enable-alpha-plugins":   "plugins would run programs from the repository",
	"--enable-exec":            "plugins would run programs from the repository",
	"--enable-star":            "plugins would run programs from the repository",
	"--network":                "containerised functions are not run",
	"--network-name":           "containerised functions are not run",
	"--mount":                  "containerised functions are not run",
	"--env":                    "containerised functions are not run",
	"-e":                       "containerised functions are not run",
	"--as-current-user":        "containerised functions are not run",
	"--helm-command":           "charts are inflated with the Helm SDK in process, not a helm binary",
	"--helm-debug":             "charts are inflated with the Helm SDK in process, not a helm binary",
	"--output":                 "Windlass reads the build's result itself",
	"--enable-managedby-label": "the label would name the kustomize library built into Windlass, not a release",
	"-o":                       "Windlass reads the build's result itself",
}

// ParseKustomizeBuildOptions reads Argo CD's kustomize.buildOptions
// ("--enable-helm --load-restrictor LoadRestrictionsNone"). A flag that
// does not map to an in-process build is refused by name.
func ParseKustomizeBuildOptions(s string) (KustomizeOptions, error) {
	var o KustomizeOptions
	args := strings.Fields(s)
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return "", fmt.Errorf("kustomize build option %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "--enable-helm":
			o.EnableHelm = !hasVal || val == "true"
		case "--load-restrictor", "--load_restrictor":
			if o.LoadRestrictor, err = value(); err == nil && o.LoadRestrictor != types.LoadRestrictionsRootOnly.String() && o.LoadRestrictor != types.LoadRestrictionsNone.String() {
				err = fmt.Errorf("kustomize build option %s: %q is not LoadRestrictionsRootOnly or LoadRestrictionsNone", name, o.LoadRestrictor)
			}
		case "--reorder":
			if o.Reorder, err = value(); err == nil && o.Reorder != "legacy" && o.Reorder != "none" {
				err = fmt.Errorf("kustomize build option --reorder: %q is not legacy or none", o.Reorder)
			}
		case "--helm-kube-version":
			o.HelmKubeVersion, err = value()
		case "--helm-api-versions":
			var v string
			if v, err = value(); err == nil {
				o.HelmAPIVersions = append(o.HelmAPIVersions, v)
			}
		default:
			if why, ok := refusedKustomizeOptions[name]; ok {
				return o, fmt.Errorf("kustomize build option %s is not supported: %s", name, why)
			}
			return o, fmt.Errorf("kustomize build option %q is not supported (Windlass takes --enable-helm, --load-restrictor, --reorder, --helm-kube-version and --helm-api-versions)", args[i])
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// String is the options as kustomize build flags.
func (o KustomizeOptions) String() string {
	var f []string
	if o.EnableHelm {
		f = append(f, "--enable-helm")
	}
	if o.LoadRestrictor != "" {
		f = append(f, "--load-restrictor", o.LoadRestrictor)
	}
	if o.Reorder != "" {
		f = append(f, "--reorder", o.Reorder)
	}
	if o.HelmKubeVersion != "" {
		f = append(f, "--helm-kube-version", o.HelmKubeVersion)
	}
	for _, v := range o.HelmAPIVersions {
		f = append(f, "--helm-api-versions", v)
	}
	return strings.Join(f, " ")
}

// rootOnly reports whether loads stay under the kustomization's folder.
func (o KustomizeOptions) rootOnly() bool {
	return o.LoadRestrictor != types.LoadRestrictionsNone.String()
}

// krusty is the options of the in-process build. Charts are inflated
// before it runs, so its own Helm support stays off.
func (o KustomizeOptions) krusty() *krusty.Options {
	k := &krusty.Options{
		Reorder:          krusty.ReorderOptionUnspecified,
		LoadRestrictions: types.LoadRestrictionsRootOnly,
		PluginConfig:     types.DisabledPluginConfig(),
	}
	if !o.rootOnly() {
		k.LoadRestrictions = types.LoadRestrictionsNone
	}
	switch o.Reorder {
	case "legacy":
		k.Reorder = krusty.ReorderOptionLegacy
	case "none":
		k.Reorder = krusty.ReorderOptionNone
	}
	return k
}

var errHelmDisabled = errors.New("helmCharts need --enable-helm in the worker's --kustomize-build-options (Argo CD's kustomize.buildOptions)")
