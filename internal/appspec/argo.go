package appspec

// Import of Argo CD's argoproj.io/v1alpha1 Application and AppProject.
//
// A document is decoded into a map and walked against mirror structs of
// Argo CD's schema before it is decoded into them, so that every problem is
// reported with the full dotted path of the offending field. The mirrors
// embed Windlass's own types where Argo CD's fields are the same, and add
// what Argo CD has beyond them as fields of type notMapped: such a field is
// ignored when its `argo` tag says so (server-set metadata, status) and is
// otherwise rejected when it holds a value. An Argo CD field Windlass does
// not support is never dropped silently.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	// maxInputBytes is the largest document ParseApplication and
	// ParseProject accept.
	maxInputBytes = 1 << 20
	// maxExpansion bounds how much larger a document may grow when its
	// YAML aliases are expanded. The YAML decoder stops exponential
	// alias bombs itself; this catches what stays under its ratio.
	maxExpansion = 16

	argoAPIVersion  = "argoproj.io/v1alpha1"
	argoKindApp     = "Application"
	argoKindProject = "AppProject"
	// argoInCluster is Argo CD's name for the cluster it runs in.
	argoInCluster = "in-cluster"
	// argoFinalizer deletes an application's resources with it.
	argoFinalizer = "resources-finalizer.argocd.argoproj.io"
	// lastApplied is kubectl's copy of the applied object, which
	// kubectl get -o yaml prints; it carries nothing of its own.
	lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

	notSupported = "not supported by Windlass"
)

// ParseApplication reads one application from YAML or JSON: an Argo CD
// Application (apiVersion argoproj.io/v1alpha1, kind Application), which
// it converts, or else Windlass's own Application. It returns the
// application with defaults applied and validated. Every error matches
// ErrInvalid; an error about one field is a *FieldError naming the field
// by its full path in the document, and an Argo CD field that Windlass
// does not support is such an error.
func ParseApplication(data []byte) (Application, error) {
	app, isArgo, err := parse[Application, argoApplication](data, argoKindApp)
	if err != nil {
		return Application{}, err
	}
	app = app.Defaulted()
	err = app.Validate()
	if err == nil {
		err = app.checkSize()
	}
	if err != nil {
		if isArgo {
			err = relocate(err, "name", "metadata.name", "spec.")
		}
		return Application{}, err
	}
	return app, nil
}

// ParseProject reads one project from YAML or JSON: an Argo CD AppProject
// (apiVersion argoproj.io/v1alpha1, kind AppProject), which it converts,
// or else Windlass's own Project. It returns the project validated; errors
// are as ParseApplication's.
func ParseProject(data []byte) (Project, error) {
	p, isArgo, err := parse[Project, argoProject](data, argoKindProject)
	if err != nil {
		return Project{}, err
	}
	if err := p.Validate(); err != nil {
		// Project.Validate calls the project's name "project".
		if isArgo {
			return Project{}, relocate(err, "project", "metadata.name", "spec.")
		}
		return Project{}, relocate(err, "project", "name", "")
	}
	return p, nil
}

// argoObject is the mirror of an Argo CD kind that converts to T.
type argoObject[T any] interface {
	windlass() (T, error)
}

// parse reads a T from data: an Argo CD object of kind, converted from its
// mirror A, or else Windlass's own T. It reports which it was.
func parse[T any, A argoObject[T]](data []byte, kind string) (T, bool, error) {
	var out T
	doc, err := readDocument(data)
	if err != nil {
		return out, false, err
	}
	switch isArgo, err := doc.argoKind(kind); {
	case err != nil:
		return out, false, err
	case !isArgo:
		return out, false, doc.decode(&out)
	}
	var a A
	if err := doc.decode(&a); err != nil {
		return out, true, err
	}
	out, err = a.windlass()
	return out, true, err
}

// relocate renames the field of a *FieldError from Windlass's spec to the
// document's: the name field becomes name, any other gets prefix.
func relocate(err error, nameField, name, prefix string) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if fe.Field == nameField {
		return &FieldError{Field: name, Reason: fe.Reason}
	}
	if strings.HasPrefix(fe.Field, "labels") || strings.HasPrefix(fe.Field, "annotations") {
		return &FieldError{Field: "metadata." + fe.Field, Reason: fe.Reason}
	}
	return &FieldError{Field: prefix + fe.Field, Reason: fe.Reason}
}

// inputError is a problem with the input as a whole rather than with one
// of its fields.
type inputError struct {
	msg string
	err error
}

func (e *inputError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

// Unwrap makes every inputError match ErrInvalid, and the cause.
func (e *inputError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrInvalid, e.err}
	}
	return []error{ErrInvalid}
}

// document is one decoded YAML or JSON document.
type document struct {
	json []byte
	obj  map[string]any
}

func readDocument(data []byte) (document, error) {
	if len(data) > maxInputBytes {
		return document{}, &inputError{msg: fmt.Sprintf("input is %d bytes, more than the limit of %d", len(data), maxInputBytes)}
	}
	switch n := len(Documents(data)); {
	case n == 0:
		return document{}, &inputError{msg: "input is empty"}
	case n > 1:
		return document{}, &inputError{msg: fmt.Sprintf("input holds %d YAML documents; give one at a time", n)}
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return document{}, &inputError{msg: "parse document", err: err}
	}
	if len(js) > maxExpansion*len(data)+4096 {
		return document{}, &inputError{msg: fmt.Sprintf("document expands from %d to %d bytes when its YAML aliases are resolved (a YAML bomb?)", len(data), len(js))}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return document{}, &inputError{msg: "parse document", err: err}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return document{}, &inputError{msg: "document is not an object"}
	}
	return document{json: js, obj: obj}, nil
}

// Documents splits a YAML stream into the documents that hold more than
// blank lines, comments and directives, in order. A document marker (---
// or ...) is one at the start of a line; a document keeps its --- line,
// which may hold its start ("--- {name: web}").
func Documents(data []byte) [][]byte {
	var docs [][]byte
	start, off, content := 0, 0, false
	for line := range bytes.Lines(data) {
		next := off + len(line)
		line = bytes.TrimRight(line, "\r\n")
		marker := func(m string) bool {
			return bytes.HasPrefix(line, []byte(m)) && (len(line) == len(m) || line[len(m)] == ' ' || line[len(m)] == '\t')
		}
		switch {
		case marker("---"), marker("..."):
			if content {
				docs = append(docs, data[start:off])
			}
			start = off
			if string(line[:3]) == "..." {
				start = next
			}
			rest := bytes.TrimSpace(line[3:])
			content = len(rest) > 0 && rest[0] != '#' && string(line[:3]) == "---"
		case !content && bytes.HasPrefix(line, []byte("%")):
		default:
			t := bytes.TrimSpace(line)
			content = content || (len(t) > 0 && t[0] != '#')
		}
		off = next
	}
	if content {
		docs = append(docs, data[start:])
	}
	return docs
}

// argoKind reports whether the document is an Argo CD object of kind want.
// A document with neither apiVersion nor kind is one of Windlass's own.
func (d document) argoKind(want string) (bool, error) {
	apiVersion, hasAPIVersion := d.obj["apiVersion"]
	kind, hasKind := d.obj["kind"]
	if !hasAPIVersion && !hasKind {
		return false, nil
	}
	av, _ := apiVersion.(string)
	k, _ := kind.(string)
	switch {
	case av == "":
		return false, &FieldError{Field: "apiVersion", Reason: "is required with kind; want " + argoAPIVersion}
	case av != argoAPIVersion:
		return false, &FieldError{Field: "apiVersion", Reason: fmt.Sprintf("%q is %s; want %s", av, notSupported, argoAPIVersion)}
	case k == "":
		return false, &FieldError{Field: "kind", Reason: "is required; want " + want}
	case k != want:
		return false, &FieldError{Field: "kind", Reason: fmt.Sprintf("is %q; want %s", k, want)}
	}
	return true, nil
}

// decode checks the document against v's type, then decodes it into v.
func (d document) decode(v any) error {
	if err := checkValue(d.obj, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	if err := json.Unmarshal(d.json, v); err != nil {
		return &inputError{msg: "decode document", err: err}
	}
	return nil
}

// notMapped is a field of Argo CD's schema that Windlass does not map. The
// tag argo:"ignore" skips it; argo:"unknown" marks a field of an embedded
// Windlass type that Argo CD does not have; otherwise a value that is not
// empty is rejected, for the reason in the `why` tag if there is one.
type notMapped struct{}

// UnmarshalJSON discards the value, which checkValue has judged.
func (*notMapped) UnmarshalJSON([]byte) error { return nil }

var notMappedType = reflect.TypeFor[notMapped]()

// Rules of a notMapped field, in its argo tag; without one it is rejected
// when set.
const (
	ruleIgnore  = "ignore"
	ruleUnknown = "unknown"
)

// schemaField is one JSON field of a struct.
type schemaField struct {
	typ  reflect.Type
	rule string // for a notMapped field
	why  string
}

// fieldsOf lists the JSON fields of a struct type by name. A field of an
// embedded struct counts unless the outer struct has one of that name, as
// encoding/json decides.
func fieldsOf(t reflect.Type) map[string]schemaField {
	out := map[string]schemaField{}
	var embedded []reflect.Type
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			embedded = append(embedded, f.Type)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		sf := schemaField{typ: f.Type}
		if f.Type == notMappedType {
			sf.rule, sf.why = f.Tag.Get("argo"), cmp.Or(f.Tag.Get("why"), notSupported)
		}
		out[name] = sf
	}
	for _, e := range embedded {
		for name, sf := range fieldsOf(e) {
			if _, ok := out[name]; !ok {
				out[name] = sf
			}
		}
	}
	return out
}

// checkValue checks a decoded JSON value against the Go type it is to be
// decoded into: unknown fields, wrong types and set notMapped fields are
// *FieldErrors naming the field's path.
func checkValue(v any, t reflect.Type, path string) error {
	if v == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return &FieldError{Field: path, Reason: "must be an object"}
		}
		return checkStruct(m, fieldsOf(t), path)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return &FieldError{Field: path, Reason: "must be an object"}
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := checkValue(m[k], t.Elem(), fmt.Sprintf("%s[%q]", path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return &FieldError{Field: path, Reason: "must be a list"}
		}
		for i, e := range list {
			if err := checkValue(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return &FieldError{Field: path, Reason: "must be a string"}
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return &FieldError{Field: path, Reason: "must be true or false"}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return &FieldError{Field: path, Reason: "must be an integer"}
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			return &FieldError{Field: path, Reason: "must be an integer in range"}
		}
	case reflect.Interface:
	default:
		return &FieldError{Field: path, Reason: fmt.Sprintf("has a type (%s) the import does not handle", t)}
	}
	return nil
}

func checkStruct(m map[string]any, fields map[string]schemaField, path string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		field := k
		if path != "" {
			field = path + "." + k
		}
		f, ok := fields[k]
		switch {
		case !ok:
			return &FieldError{Field: field, Reason: "unknown field"}
		case f.typ != notMappedType:
			if err := checkValue(m[k], f.typ, field); err != nil {
				return err
			}
		case f.rule == ruleIgnore:
		case f.rule == ruleUnknown:
			return &FieldError{Field: field, Reason: "unknown field (it is Windlass's, not Argo CD's)"}
		case isSet(m[k]):
			return &FieldError{Field: field, Reason: f.why}
		}
	}
	return nil
}

// isSet reports whether a JSON value says more than its absence would:
// null, false, "" and empty lists and objects do not; numbers do.
func isSet(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// argoMeta is the metadata of an Argo CD object.
type argoMeta struct {
	Name string `json:"name"`
	// Namespace is Argo CD's control-plane namespace, or with apps in
	// any namespace the Application's own.
	Namespace       string            `json:"namespace"`
	Labels          map[string]string `json:"labels"`
	Annotations     map[string]string `json:"annotations"`
	Finalizers      []string          `json:"finalizers"`
	GenerateName    notMapped         `json:"generateName" why:"not supported by Windlass: set metadata.name"`
	OwnerReferences notMapped         `json:"ownerReferences" why:"not supported by Windlass (is the object generated, by an ApplicationSet say?)"`
	// Set by the API server; kubectl get -o yaml prints them.
	UID                        notMapped `json:"uid" argo:"ignore"`
	ResourceVersion            notMapped `json:"resourceVersion" argo:"ignore"`
	Generation                 notMapped `json:"generation" argo:"ignore"`
	CreationTimestamp          notMapped `json:"creationTimestamp" argo:"ignore"`
	DeletionTimestamp          notMapped `json:"deletionTimestamp" argo:"ignore"`
	DeletionGracePeriodSeconds notMapped `json:"deletionGracePeriodSeconds" argo:"ignore"`
	ManagedFields              notMapped `json:"managedFields" argo:"ignore"`
	SelfLink                   notMapped `json:"selfLink" argo:"ignore"`
}

// check rejects the metadata Windlass has no place for. noun names the
// kind of object in messages.
func (m argoMeta) check(noun string) error {
	for i, f := range m.Finalizers {
		switch f {
		case argoFinalizer, argoFinalizer + "/background", argoFinalizer + "/foreground":
		default:
			return &FieldError{Field: fmt.Sprintf("metadata.finalizers[%d]", i),
				Reason: fmt.Sprintf("%q is %s; only %s is", f, notSupported, argoFinalizer)}
		}
	}
	return nil
}

// withoutLastApplied drops kubectl's copy of the object, which a manifest
// from kubectl get carries and no Windlass app needs.
func withoutLastApplied(kv map[string]string) map[string]string {
	kv = maps.Clone(kv)
	delete(kv, lastApplied)
	return nonEmpty(kv)
}

// nonEmpty makes an empty map nil, as an absent one parses.
func nonEmpty(kv map[string]string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	return kv
}

// argoApplication mirrors Argo CD's Application.
type argoApplication struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   argoMeta    `json:"metadata"`
	Spec       argoAppSpec `json:"spec"`
	Status     notMapped   `json:"status" argo:"ignore"`
	Operation  notMapped   `json:"operation" why:"not supported by Windlass: it is an Argo CD operation in progress; remove it and sync with Windlass"`
}

type argoAppSpec struct {
	Project              string                      `json:"project"`
	Source               *argoSource                 `json:"source"`
	Sources              []argoSource                `json:"sources"`
	Destination          argoDestination             `json:"destination"`
	SyncPolicy           *argoSyncPolicy             `json:"syncPolicy"`
	IgnoreDifferences    []ResourceIgnoreDifferences `json:"ignoreDifferences"`
	Info                 []InfoItem                  `json:"info"`
	RevisionHistoryLimit *int                        `json:"revisionHistoryLimit"`
	SourceHydrator       notMapped                   `json:"sourceHydrator"`
}

type argoSource struct {
	Source
	Helm      *argoHelm      `json:"helm"`
	Kustomize *argoKustomize `json:"kustomize"`
}

type argoHelm struct {
	Helm
	// Version is the Helm major version Argo CD renders with: only v3
	// remains, which Windlass's in-process Helm renders alike.
	Version         string    `json:"version"`
	PassCredentials notMapped `json:"passCredentials"`
}

// argoHelmV3 is the one helm.version Argo CD still has.
const argoHelmV3 = "v3"

type argoKustomize struct {
	Kustomize
	// Replicas' count is an integer or a string holding one.
	Replicas []argoReplica `json:"replicas"`
	// Version picks one of Argo CD's configured kustomize binaries;
	// Windlass always builds with its in-process Kustomize.
	Version notMapped `json:"version" argo:"ignore"`
	// KubeVersion and APIVersions reach only the Helm charts a
	// kustomization inflates (helmCharts); Windlass takes the worker's
	// build options instead.
	KubeVersion      notMapped `json:"kubeVersion" argo:"ignore"`
	APIVersions      notMapped `json:"apiVersions" argo:"ignore"`
	AllowRemoteBases notMapped `json:"allowRemoteBases" argo:"unknown"`
}

type argoReplica struct {
	Name  string `json:"name"`
	Count any    `json:"count"`
}

// argoDestination is an application's destination or one that a project
// allows.
type argoDestination struct {
	Destination
	Name string `json:"name"`
}

type argoSyncPolicy struct {
	Automated                *argoAutomated            `json:"automated"`
	SyncOptions              []string                  `json:"syncOptions"`
	Retry                    *argoRetry                `json:"retry"`
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata"`
}

type argoAutomated struct {
	Automated
	Enabled *bool `json:"enabled"`
}

type argoRetry struct {
	Limit   int          `json:"limit"`
	Backoff *argoBackoff `json:"backoff"`
	Refresh bool         `json:"refresh"`
}

type argoBackoff struct {
	Backoff
	Factor *int64 `json:"factor"`
}

func (a argoApplication) windlass() (Application, error) {
	if err := a.Metadata.check("application"); err != nil {
		return Application{}, err
	}
	s := a.Spec
	app := Application{Name: a.Metadata.Name, Project: s.Project, IgnoreDifferences: s.IgnoreDifferences,
		Labels: nonEmpty(a.Metadata.Labels), Annotations: withoutLastApplied(a.Metadata.Annotations)}
	if len(s.Info) > 0 {
		app.Info = s.Info
	}
	app.RevisionHistoryLimit = s.RevisionHistoryLimit
	app.Annotations, app.DependsOn = takeDependsOn(app.Annotations)
	if ns := a.Metadata.Namespace; ns != ArgoControlNamespace {
		app.SourceNamespace = ns // Argo CD's own namespace says nothing
	}
	if s.Source != nil {
		if len(s.Sources) > 0 {
			return Application{}, &FieldError{Field: "spec.source", Reason: "must not be set together with spec.sources"}
		}
		src, err := s.Source.windlass("spec.source")
		if err != nil {
			return Application{}, err
		}
		app.Source = src
	}
	for i, s := range s.Sources {
		src, err := s.windlass(fmt.Sprintf("spec.sources[%d]", i))
		if err != nil {
			return Application{}, err
		}
		app.Sources = append(app.Sources, src)
	}
	var err error
	if app.Destination, err = s.Destination.destination("spec.destination"); err != nil {
		return Application{}, err
	}
	if app.SyncPolicy, err = s.SyncPolicy.windlass("spec.syncPolicy"); err != nil {
		return Application{}, err
	}
	return app, nil
}

func (s argoSource) windlass(field string) (Source, error) {
	out := s.Source
	if s.Helm != nil {
		if v := s.Helm.Version; v != "" && v != argoHelmV3 {
			return Source{}, &FieldError{Field: field + ".helm.version",
				Reason: fmt.Sprintf("%q is %s; only %s is, which renders with Windlass's in-process Helm", v, notSupported, argoHelmV3)}
		}
		out.Helm = &s.Helm.Helm
	}
	if s.Kustomize != nil {
		k, err := s.Kustomize.windlass(field + ".kustomize")
		if err != nil {
			return Source{}, err
		}
		out.Kustomize = &k
	}
	// Argo CD's jsonnet options are not optional, so kubectl prints
	// "jsonnet: {}" for every directory; empty, they select nothing.
	if d := out.Directory; d != nil && d.Jsonnet != nil &&
		len(d.Jsonnet.ExtVars) == 0 && len(d.Jsonnet.TLAs) == 0 && len(d.Jsonnet.Libs) == 0 {
		dir := *d
		dir.Jsonnet = nil
		out.Directory = &dir
	}
	return out, nil
}

func (k argoKustomize) windlass(field string) (Kustomize, error) {
	out := k.Kustomize
	for i, r := range k.Replicas {
		n, err := replicaCount(r.Count)
		if err != nil {
			return Kustomize{}, &FieldError{Field: fmt.Sprintf("%s.replicas[%d].count", field, i), Reason: err.Error()}
		}
		out.Replicas = append(out.Replicas, KustomizeReplica{Name: r.Name, Count: n})
	}
	return out, nil
}

func replicaCount(v any) (int64, error) {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && v >= 0 && v <= math.MaxInt32 {
			return int64(v), nil
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, errors.New("must be a non-negative integer, or a string holding one")
}

// destination converts an app's destination: the built-in name
// "in-cluster" is InClusterServer; another name is kept, and resolved to a
// registered cluster's server where the app reaches the cluster.
func (d argoDestination) destination(field string) (Destination, error) {
	out := Destination{Server: d.Server, Name: d.Name, Namespace: d.Namespace}
	switch {
	case d.Name == "":
	case d.Name == argoInCluster && (d.Server == "" || d.Server == InClusterServer):
		out.Server, out.Name = InClusterServer, ""
	case d.Server != "":
		return Destination{}, &FieldError{Field: field, Reason: fmt.Sprintf("sets both server (%s) and name (%s): name the cluster by one of them", d.Server, d.Name)}
	}
	return out, nil
}

// projectDestination converts a destination a project allows. The name
// "in-cluster" stands for InClusterServer, which an app naming in-cluster
// has, and "!in-cluster" alone denies it; a name beside the server "*"
// adds nothing.
func (d argoDestination) projectDestination() ProjectDestination {
	out := ProjectDestination{Server: d.Server, Name: d.Name, Namespace: d.Namespace}
	switch {
	case d.Name == argoInCluster && (d.Server == "" || d.Server == InClusterServer):
		out.Server, out.Name = InClusterServer, ""
	case d.Name == "!"+argoInCluster && d.Server == "":
		out.Server, out.Name = "!"+InClusterServer, ""
	case d.Server == "*":
		out.Name = ""
	}
	return out
}

func (p *argoSyncPolicy) windlass(field string) (*SyncPolicy, error) {
	if p == nil {
		return nil, nil
	}
	out := &SyncPolicy{SyncOptions: p.SyncOptions, ManagedNamespaceMetadata: p.ManagedNamespaceMetadata}
	if a := p.Automated; a != nil {
		switch {
		case a.Enabled == nil || *a.Enabled:
			out.Automated = &a.Automated
		case a.Automated != Automated{}:
			return nil, &FieldError{Field: field + ".automated.enabled",
				Reason: "is false while prune, selfHeal or allowEmpty is set: Windlass keeps no settings for a disabled automated sync; remove them or enable it"}
		}
	}
	if r := p.Retry; r != nil {
		out.Retry = &RetryStrategy{Limit: r.Limit, Refresh: r.Refresh}
		if b := r.Backoff; b != nil {
			out.Retry.Backoff = &b.Backoff
			if b.Factor != nil {
				if *b.Factor == 0 {
					return nil, &FieldError{Field: field + ".retry.backoff.factor", Reason: "0 is " + notSupported + ", which reads 0 as the default factor, 2"}
				}
				out.Retry.Backoff.Factor = *b.Factor
			}
		}
	}
	return out, nil
}

// argoProject mirrors Argo CD's AppProject.
type argoProject struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   argoMeta        `json:"metadata"`
	Spec       argoProjectSpec `json:"spec"`
	Status     notMapped       `json:"status" argo:"ignore"`
}

type argoProjectSpec struct {
	Description                     string                      `json:"description"`
	SourceRepos                     []string                    `json:"sourceRepos"`
	Destinations                    []argoDestination           `json:"destinations"`
	ClusterResourceWhitelist        []argoClusterResource       `json:"clusterResourceWhitelist"`
	ClusterResourceBlacklist        []argoClusterResource       `json:"clusterResourceBlacklist"`
	NamespaceResourceWhitelist      []GroupKind                 `json:"namespaceResourceWhitelist"`
	NamespaceResourceBlacklist      []GroupKind                 `json:"namespaceResourceBlacklist"`
	SyncWindows                     []SyncWindow                `json:"syncWindows"`
	Roles                           []argoRole                  `json:"roles"`
	OrphanedResources               *OrphanedResources          `json:"orphanedResources"`
	SignatureKeys                   []SignatureKey              `json:"signatureKeys"`
	SourceNamespaces                []string                    `json:"sourceNamespaces"`
	DestinationServiceAccounts      []DestinationServiceAccount `json:"destinationServiceAccounts"`
	PermitOnlyProjectScopedClusters notMapped                   `json:"permitOnlyProjectScopedClusters" why:"not supported by Windlass: registered clusters belong to no project, so none would be permitted; remove it and restrict clusters with destinations"`
}

type argoClusterResource struct {
	GroupKind
	Name notMapped `json:"name" why:"not supported by Windlass: a list names kinds, not objects"`
}

type argoRole struct {
	ProjectRole
	JWTTokens notMapped `json:"jwtTokens" why:"not supported by Windlass, which mints its own tokens: remove them and create new ones"`
}

func (a argoProject) windlass() (Project, error) {
	if err := a.Metadata.check("project"); err != nil {
		return Project{}, err
	}
	s := a.Spec
	p := Project{
		Name:                       a.Metadata.Name,
		Description:                s.Description,
		Labels:                     nonEmpty(a.Metadata.Labels),
		Annotations:                withoutLastApplied(a.Metadata.Annotations),
		SourceRepos:                s.SourceRepos,
		ClusterResourceWhitelist:   convert(s.ClusterResourceWhitelist, func(r argoClusterResource) GroupKind { return r.GroupKind }),
		ClusterResourceBlacklist:   convert(s.ClusterResourceBlacklist, func(r argoClusterResource) GroupKind { return r.GroupKind }),
		NamespaceResourceWhitelist: s.NamespaceResourceWhitelist,
		NamespaceResourceBlacklist: s.NamespaceResourceBlacklist,
		SyncWindows:                s.SyncWindows,
		Roles:                      convert(s.Roles, func(r argoRole) ProjectRole { return r.ProjectRole }),
		OrphanedResources:          s.OrphanedResources,
		DestinationServiceAccounts: s.DestinationServiceAccounts,
		SourceNamespaces:           s.SourceNamespaces,
		SignatureKeys:              s.SignatureKeys,
	}
	p.Destinations = convert(s.Destinations, argoDestination.projectDestination)
	return p, nil
}

// convert maps f over in; nil stays nil.
func convert[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
