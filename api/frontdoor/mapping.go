package frontdoor

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// Applications is the resource the front door watches.
var Applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

const (
	// finalizer is Argo CD's: delete the app's resources with it. Its
	// /foreground and /background forms choose the propagation.
	finalizer = "resources-finalizer.argocd.argoproj.io"
	// DeclaredBy is the annotation of an app that an Application resource
	// declares: its namespace/name. The front door deletes only the apps
	// it declared, and refuses a second resource of the same app.
	DeclaredBy = "windlass.dev/declared-by"

	// Condition types, Argo CD's names.
	condInvalidSpec = "InvalidSpecError"
	condComparison  = "ComparisonError"
	condDeletion    = "DeletionError"

	// maxResources bounds the resource list written to a status.
	maxResources = 500
)

// Cascades of the delete update.
const (
	cascadeForeground = "foreground"
	cascadeBackground = "background"
	cascadeOrphan     = "orphan"
)

// appRef names a Windlass app.
type appRef struct{ project, name string }

// specOf converts an Application resource to the app it declares, which
// carries key (namespace/name) in DeclaredBy. It reads metadata.name,
// labels, annotations and spec only: status, operation,
// finalizers and the server's metadata belong to Kubernetes or to the
// front door, not to the app.
func specOf(obj map[string]any, key string) (appspec.Application, error) {
	spec, err := appspec.ParseApplication(argoDocument(obj, "Application"))
	spec.Annotations = declared(spec.Annotations, key)
	return spec, err
}

// declared is annotations with DeclaredBy set to key.
func declared(annotations map[string]string, key string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[DeclaredBy] = key
	return annotations
}

// argoDocument is the Argo CD document of kind that a resource holds:
// its metadata.name, labels, annotations and spec.
func argoDocument(obj map[string]any, kind string) []byte {
	meta, _ := obj["metadata"].(map[string]any)
	m := map[string]any{}
	for _, k := range []string{"name", "labels", "annotations"} {
		if v, ok := meta[k]; ok {
			m[k] = v
		}
	}
	// An unstructured object always marshals.
	b, _ := json.Marshal(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": kind, "metadata": m, "spec": obj["spec"]})
	return b
}

// refOf is the app a resource names, even when its spec does not
// validate: spec.project (default "default") and metadata.name.
func refOf(obj map[string]any) appRef {
	meta, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	name, _ := meta["name"].(string)
	project, _ := spec["project"].(string)
	if project == "" {
		project = appspec.DefaultProject
	}
	return appRef{project: project, name: name}
}

// cascadeOf is the cascade that finalizers ask for, and whether they hold
// Argo CD's resources finalizer at all.
func cascadeOf(finalizers []string) (string, bool) {
	for _, f := range finalizers {
		switch f {
		case finalizer, finalizer + "/foreground":
			return cascadeForeground, true
		case finalizer + "/background":
			return cascadeBackground, true
		}
	}
	return cascadeOrphan, false
}

// withoutFinalizer drops Argo CD's resources finalizers (all forms).
func withoutFinalizer(finalizers []string) []string {
	out := []string{}
	for _, f := range finalizers {
		if f != finalizer && f != finalizer+"/foreground" && f != finalizer+"/background" {
			out = append(out, f)
		}
	}
	return out
}

// condition is one entry of status.conditions.
type condition struct {
	Type               string `json:"type"`
	Message            string `json:"message"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// crStatus is the status of an Application resource, in Argo CD's field
// names (kubectl get applications prints sync and health). It leaves out
// reconciledAt, which would cost a write at every refresh.
type crStatus struct {
	Sync           *syncStatus      `json:"sync,omitempty"`
	Health         *healthStatus    `json:"health,omitempty"`
	OperationState *operationState  `json:"operationState,omitempty"`
	Resources      []resourceStatus `json:"resources,omitempty"`
	Conditions     []condition      `json:"conditions,omitempty"`
}

type syncStatus struct {
	Status   string `json:"status"`
	Revision string `json:"revision,omitempty"`
}

type healthStatus struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

type operationState struct {
	Operation  operation   `json:"operation"`
	Phase      string      `json:"phase"`
	Message    string      `json:"message,omitempty"`
	SyncResult *syncResult `json:"syncResult,omitempty"`
	StartedAt  string      `json:"startedAt,omitempty"`
	FinishedAt string      `json:"finishedAt,omitempty"`
}

type operation struct {
	Sync        syncOperation `json:"sync"`
	InitiatedBy initiatedBy   `json:"initiatedBy"`
}

type syncOperation struct {
	Revision string `json:"revision,omitempty"`
	Prune    bool   `json:"prune,omitempty"`
}

type initiatedBy struct {
	Username  string `json:"username,omitempty"`
	Automated bool   `json:"automated,omitempty"`
}

type syncResult struct {
	Revision string `json:"revision"`
}

type resourceStatus struct {
	Group           string        `json:"group,omitempty"`
	Version         string        `json:"version,omitempty"`
	Kind            string        `json:"kind"`
	Namespace       string        `json:"namespace,omitempty"`
	Name            string        `json:"name"`
	Status          string        `json:"status,omitempty"`
	Health          *healthStatus `json:"health,omitempty"`
	RequiresPruning bool          `json:"requiresPruning,omitempty"`
}

// phase maps a Windlass sync phase to Argo CD's operation phases
// (Running, Succeeded, Failed, Error, Terminating).
func phase(p string) string {
	switch p {
	case workflows.PhasePending, workflows.PhaseRunning:
		return "Running"
	case workflows.PhaseTerminated:
		return "Failed"
	}
	return p
}

// timestamp renders t as Kubernetes does (RFC 3339, seconds), or "".
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// renderStatus is the status of a resource whose app has view (nil: no
// app), with conds. A condition that prev (the current status) already
// has with the same type and message keeps its transition time; a new
// one gets now.
func renderStatus(view *workflows.AppView, conds []condition, prev map[string]any, now time.Time) map[string]any {
	var st crStatus
	if view == nil {
		st.Sync = &syncStatus{Status: string(appspec.SyncUnknown)}
		st.Health = &healthStatus{Status: string(appspec.HealthUnknown)}
	} else {
		s := view.Status
		st.Sync = &syncStatus{Status: string(s.Sync), Revision: s.SHA}
		st.Health = &healthStatus{Status: string(s.Health)}
		st.OperationState = operationOf(view)
		for i, r := range s.Resources {
			if i == maxResources {
				break
			}
			rs := resourceStatus{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
				Status: string(r.Status), RequiresPruning: r.RequiresPruning}
			if r.Health != "" {
				rs.Health = &healthStatus{Status: string(r.Health), Message: r.HealthMessage}
			}
			st.Resources = append(st.Resources, rs)
		}
		if s.Message != "" && s.Sync == appspec.SyncUnknown {
			conds = append(conds, condition{Type: condComparison, Message: s.Message})
		}
		for _, c := range s.Conditions {
			conds = append(conds, condition{Type: c.Type, Message: c.Message})
		}
	}
	old := prevConditions(prev)
	for _, c := range conds {
		c.LastTransitionTime = timestamp(now)
		if i := slices.IndexFunc(old, func(o condition) bool { return o.Type == c.Type && o.Message == c.Message }); i >= 0 && old[i].LastTransitionTime != "" {
			c.LastTransitionTime = old[i].LastTransitionTime
		}
		st.Conditions = append(st.Conditions, c)
	}
	return toMap(st)
}

// operationOf is the running operation, or else the latest sync.
func operationOf(view *workflows.AppView) *operationState {
	if op := view.Status.Operation; op != nil {
		return &operationState{
			Operation: operation{InitiatedBy: initiatedByOf(op.Initiator)},
			Phase:     phase(op.Phase), StartedAt: timestamp(op.StartedAt),
		}
	}
	if len(view.History) == 0 {
		return nil
	}
	h := view.History[0]
	return &operationState{
		Operation: operation{Sync: syncOperation{Revision: h.SHA, Prune: h.Prune}, InitiatedBy: initiatedByOf(h.Initiator)},
		Phase:     phase(h.Phase), Message: h.Message, SyncResult: &syncResult{Revision: h.SHA},
		StartedAt: timestamp(h.StartedAt), FinishedAt: timestamp(h.FinishedAt),
	}
}

func initiatedByOf(initiator string) initiatedBy {
	if initiator == workflows.InitiatorAutomated {
		return initiatedBy{Automated: true}
	}
	return initiatedBy{Username: initiator}
}

func prevConditions(prev map[string]any) []condition {
	var st crStatus
	b, err := json.Marshal(prev)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return nil
	}
	return st.Conditions
}

// toMap is v as unstructured JSON.
func toMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("frontdoor: status does not marshal: %v", err))
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("frontdoor: status does not unmarshal: %v", err))
	}
	return m
}

// sameStatus says whether the current status cur (unstructured, as read)
// already is want.
func sameStatus(cur any, want map[string]any) bool {
	m, ok := cur.(map[string]any)
	if cur == nil {
		m, ok = map[string]any{}, true // no status is an empty one
	}
	if !ok {
		return false
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false
	}
	var norm map[string]any
	if json.Unmarshal(b, &norm) != nil {
		return false
	}
	return reflect.DeepEqual(norm, want)
}
