package appspec

// Tool names. A source's tool is the one whose options it sets (Helm,
// Kustomize, Plugin, Directory.Jsonnet), otherwise it is detected from the
// files at the path, as in Argo CD.
const (
	ToolDirectory = "directory"
	ToolHelm      = "helm"
	ToolKustomize = "kustomize"
	ToolJsonnet   = "jsonnet"
	ToolPlugin    = "plugin"
)

// Helm holds the options of the Helm tool (Argo CD's source.helm).
type Helm struct {
	// ReleaseName defaults to the application name.
	ReleaseName string `json:"releaseName,omitempty"`
	// Values is a values file given inline, as a string of YAML.
	Values string `json:"values,omitempty"`
	// ValuesObject is a values file given inline, as an object. It wins
	// over Values.
	ValuesObject map[string]any `json:"valuesObject,omitempty"`
	// ValueFiles are paths relative to the chart (they must stay inside
	// the repository), or $ref/path to read from the source named ref.
	ValueFiles              []string            `json:"valueFiles,omitempty"`
	IgnoreMissingValueFiles bool                `json:"ignoreMissingValueFiles,omitempty"`
	Parameters              []HelmParameter     `json:"parameters,omitempty"`
	FileParameters          []HelmFileParameter `json:"fileParameters,omitempty"`
	SkipCrds                bool                `json:"skipCrds,omitempty"`
	SkipTests               bool                `json:"skipTests,omitempty"`
	// Namespace is the release namespace (default: the destination's).
	Namespace   string   `json:"namespace,omitempty"`
	KubeVersion string   `json:"kubeVersion,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
	// SkipSchemaValidation renders without checking the values against
	// the chart's values.schema.json.
	SkipSchemaValidation bool `json:"skipSchemaValidation,omitempty"`
}

// HelmParameter is a --set (or --set-string with ForceString) value.
type HelmParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString,omitempty"`
}

// HelmFileParameter is a --set-file value: Path is inside the repository.
type HelmFileParameter struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Kustomize holds the overrides of the Kustomize tool (Argo CD's
// source.kustomize).
type Kustomize struct {
	NamePrefix        string             `json:"namePrefix,omitempty"`
	NameSuffix        string             `json:"nameSuffix,omitempty"`
	Images            []string           `json:"images,omitempty"`
	CommonLabels      map[string]string  `json:"commonLabels,omitempty"`
	CommonAnnotations map[string]string  `json:"commonAnnotations,omitempty"`
	Namespace         string             `json:"namespace,omitempty"`
	Replicas          []KustomizeReplica `json:"replicas,omitempty"`
	Patches           []KustomizePatch   `json:"patches,omitempty"`
	Components        []string           `json:"components,omitempty"`
	// ForceCommonLabels and ForceCommonAnnotations let the overrides
	// replace keys the kustomization already sets (otherwise an error).
	ForceCommonLabels      bool `json:"forceCommonLabels,omitempty"`
	ForceCommonAnnotations bool `json:"forceCommonAnnotations,omitempty"`
	// CommonAnnotationsEnvsubst expands $ARGOCD_APP_* variables in the
	// annotation values (label values and images are always expanded).
	CommonAnnotationsEnvsubst bool `json:"commonAnnotationsEnvsubst,omitempty"`
	// LabelWithoutSelector adds the common labels without touching
	// selectors; LabelIncludeTemplates then also labels pod templates.
	LabelWithoutSelector  bool `json:"labelWithoutSelector,omitempty"`
	LabelIncludeTemplates bool `json:"labelIncludeTemplates,omitempty"`
	// IgnoreMissingComponents skips components that do not exist.
	IgnoreMissingComponents bool `json:"ignoreMissingComponents,omitempty"`
	// AllowRemoteBases lets the kustomization load bases and resources
	// over the network. Off by default.
	AllowRemoteBases bool `json:"allowRemoteBases,omitempty"`
}

// KustomizeReplica overrides the replica count of a workload by name.
type KustomizeReplica struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// KustomizePatch is a strategic-merge or JSON 6902 patch, inline or by path.
type KustomizePatch struct {
	Path    string             `json:"path,omitempty"`
	Patch   string             `json:"patch,omitempty"`
	Target  *KustomizeSelector `json:"target,omitempty"`
	Options map[string]bool    `json:"options,omitempty"`
}

// KustomizeSelector selects the objects a patch applies to.
type KustomizeSelector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// Jsonnet holds the options of the Jsonnet tool (Argo CD's
// source.directory.jsonnet).
type Jsonnet struct {
	ExtVars []JsonnetVar `json:"extVars,omitempty"`
	TLAs    []JsonnetVar `json:"tlas,omitempty"`
	// Libs are library directories inside the repository (jpath).
	Libs []string `json:"libs,omitempty"`
}

// JsonnetVar is an external variable or top-level argument; Code means the
// value is Jsonnet code rather than a string.
type JsonnetVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Code  bool   `json:"code,omitempty"`
}

// Plugin selects a configured config-management plugin (Argo CD's
// source.plugin).
type Plugin struct {
	// Name of the plugin; empty means the first plugin whose discovery
	// rule matches.
	Name       string            `json:"name,omitempty"`
	Env        []EnvVar          `json:"env,omitempty"`
	Parameters []PluginParameter `json:"parameters,omitempty"`
}

// EnvVar is a name and a value.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// PluginParameter is a parameter of a plugin: a string, an array or a map.
type PluginParameter struct {
	Name   string            `json:"name"`
	String *string           `json:"string,omitempty"`
	Array  []string          `json:"array,omitempty"`
	Map    map[string]string `json:"map,omitempty"`
}

// ExplicitTool is the tool the source's options select, or "" when the tool
// is to be detected from the files.
func (s Source) ExplicitTool() string {
	switch {
	case s.Chart != "" || s.Helm != nil:
		return ToolHelm
	case s.Kustomize != nil:
		return ToolKustomize
	case s.Plugin != nil:
		return ToolPlugin
	case s.Directory != nil && s.Directory.Jsonnet != nil:
		return ToolJsonnet
	case s.Directory != nil:
		return ToolDirectory
	}
	return ""
}
