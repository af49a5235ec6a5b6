package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Argo CD's tracking, read so that Windlass can take over the objects an
// Argo CD application deployed. It is opt-in per app, through the app
// annotations below: `windlass migrate argocd` sets them from argocd-cm.
const (
	// ArgoTrackingIDAnnotation is Argo CD's tracking annotation, valued
	// <app>:<group>/<Kind>:<namespace>/<name>, where <app> is
	// <namespace>_<name> for an app outside Argo CD's own namespace.
	ArgoTrackingIDAnnotation = "argocd.argoproj.io/tracking-id"
	// ArgoDefaultInstanceLabel is Argo CD's default tracking label
	// (application.instanceLabelKey), valued <app>.
	ArgoDefaultInstanceLabel = "app.kubernetes.io/instance"
	// ArgoInstallationIDAnnotation names the Argo CD instance that applied
	// an object, when argocd-cm sets installationID.
	ArgoInstallationIDAnnotation = "argocd.argoproj.io/installation-id"

	// AppAnnotationArgoTracking, on a Windlass app, names the Argo CD
	// tracking method (application.resourceTrackingMethod) whose objects
	// the app takes over: label, annotation or annotation+label.
	AppAnnotationArgoTracking = "windlass.dev/argocd-tracking"
	// AppAnnotationArgoInstanceLabelKey, on a Windlass app, is Argo CD's
	// application.instanceLabelKey; ArgoDefaultInstanceLabel when unset.
	AppAnnotationArgoInstanceLabelKey = "windlass.dev/argocd-instance-label-key"
	// AppAnnotationArgoApp, on a Windlass app, is the Argo CD app's name as
	// its tracking writes it (<namespace>_<name> for an app outside Argo
	// CD's namespace); the Windlass app's name when unset.
	AppAnnotationArgoApp = "windlass.dev/argocd-app"
	// AppAnnotationArgoInstallationID, on a Windlass app, is argocd-cm's
	// installationID: an object another Argo CD instance applied (its
	// ArgoInstallationIDAnnotation differs) is not the app's.
	AppAnnotationArgoInstallationID = "windlass.dev/argocd-installation-id"
)

// ArgoTrackingMethod is Argo CD's application.resourceTrackingMethod.
type ArgoTrackingMethod string

// The tracking methods. With annotation+label the label is informational
// only: the annotation decides, as in Argo CD.
const (
	ArgoTrackLabel              ArgoTrackingMethod = "label"
	ArgoTrackAnnotation         ArgoTrackingMethod = "annotation"
	ArgoTrackAnnotationAndLabel ArgoTrackingMethod = "annotation+label"
)

// ArgoTracking says how an app recognises the objects Argo CD deployed
// for it.
type ArgoTracking struct {
	Method ArgoTrackingMethod `json:"method"`
	// LabelKey is the instance label (label method).
	LabelKey string `json:"labelKey,omitempty"`
	// App is the Argo CD app's name in its tracking.
	App string `json:"app"`
	// InstallationID is Argo CD's installationID, if it has one.
	InstallationID string `json:"installationID,omitempty"`
}

// ArgoTrackingOf reads an app's Argo CD tracking from its annotations;
// nil when AppAnnotationArgoTracking is not set. app is the Windlass app's
// name, the default Argo CD name.
func ArgoTrackingOf(annotations map[string]string, app string) (*ArgoTracking, error) {
	method, ok := annotations[AppAnnotationArgoTracking]
	if !ok {
		for _, k := range []string{AppAnnotationArgoInstanceLabelKey, AppAnnotationArgoApp, AppAnnotationArgoInstallationID} {
			if _, set := annotations[k]; set {
				return nil, fmt.Errorf("annotation %s needs %s", k, AppAnnotationArgoTracking)
			}
		}
		return nil, nil
	}
	t := &ArgoTracking{Method: ArgoTrackingMethod(method), LabelKey: ArgoDefaultInstanceLabel, App: app}
	switch t.Method {
	case ArgoTrackLabel, ArgoTrackAnnotation, ArgoTrackAnnotationAndLabel:
	default:
		return nil, fmt.Errorf("annotation %s: tracking method %q is not label, annotation or annotation+label", AppAnnotationArgoTracking, method)
	}
	if k, ok := annotations[AppAnnotationArgoInstanceLabelKey]; ok {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("annotation %s: label key %q: %s", AppAnnotationArgoInstanceLabelKey, k, errs[0])
		}
		t.LabelKey = k
	}
	if v, ok := annotations[AppAnnotationArgoApp]; ok {
		ns, name := SplitArgoApp(v)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || v == "" || strings.Contains(v, ":") {
			return nil, fmt.Errorf("annotation %s: %q is not an Argo CD app name (<name> or <namespace>_<name>)", AppAnnotationArgoApp, v)
		}
		if ns != "" {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, fmt.Errorf("annotation %s: namespace %q: %s", AppAnnotationArgoApp, ns, errs[0])
			}
		}
		t.App = v
	}
	t.InstallationID = annotations[AppAnnotationArgoInstallationID]
	return t, nil
}

// ArgoTrackingID is a parsed Argo CD tracking annotation.
type ArgoTrackingID struct {
	// App is the app as written: <name> or <namespace>_<name>.
	App       string
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// ParseArgoTrackingID parses an argocd.argoproj.io/tracking-id value.
func ParseArgoTrackingID(v string) (ArgoTrackingID, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return ArgoTrackingID{}, fmt.Errorf("tracking id %q: want <app>:<group>/<kind>:<namespace>/<name>", v)
	}
	group, kind, ok1 := strings.Cut(parts[1], "/")
	ns, name, ok2 := strings.Cut(parts[2], "/")
	switch {
	case !ok1 || !ok2 || strings.Contains(kind, "/") || strings.Contains(name, "/"):
		return ArgoTrackingID{}, fmt.Errorf("tracking id %q: want <app>:<group>/<kind>:<namespace>/<name>", v)
	case parts[0] == "":
		return ArgoTrackingID{}, fmt.Errorf("tracking id %q: no app", v)
	case kind == "":
		return ArgoTrackingID{}, fmt.Errorf("tracking id %q: no kind", v)
	case name == "":
		return ArgoTrackingID{}, fmt.Errorf("tracking id %q: no name", v)
	}
	return ArgoTrackingID{App: parts[0], Group: group, Kind: kind, Namespace: ns, Name: name}, nil
}

// SplitArgoApp splits an Argo CD tracking app into its namespace ("" for
// an app in Argo CD's own namespace) and name. Neither may hold "_", so
// the first one separates them.
func SplitArgoApp(v string) (namespace, name string) {
	if ns, n, ok := strings.Cut(v, "_"); ok {
		return ns, n
	}
	return "", v
}

// Refers reports whether the id names the object of kind gk at
// namespace/name. A cluster-scoped object (namespace "") matches any
// namespace: Argo CD may write the app's destination namespace there. An
// id copied onto another object (a template's annotations) does not.
func (id ArgoTrackingID) Refers(gk schema.GroupKind, namespace, name string) bool {
	return id.Group == gk.Group && id.Kind == gk.Kind && id.Name == name &&
		(namespace == "" || id.Namespace == namespace)
}

// Owner returns the Argo CD app that tracks the object of kind gk at
// namespace/name with the given labels and annotations, following the
// method; "" when Argo CD's tracking names none. An app of another Argo CD
// instance (another installation ID) is returned as "<app> (installation
// <id>)", which names no app of this one. Windlass's own tracking is not
// looked at.
func (t *ArgoTracking) Owner(gk schema.GroupKind, namespace, name string, labels, annotations map[string]string) string {
	owner := t.owner(gk, namespace, name, labels, annotations)
	if id := annotations[ArgoInstallationIDAnnotation]; owner != "" && t.InstallationID != "" && id != "" && id != t.InstallationID {
		return owner + " (installation " + id + ")"
	}
	return owner
}

func (t *ArgoTracking) owner(gk schema.GroupKind, namespace, name string, labels, annotations map[string]string) string {
	if t.Method == ArgoTrackLabel {
		return labels[t.LabelKey]
	}
	v, ok := annotations[ArgoTrackingIDAnnotation]
	if !ok {
		return ""
	}
	id, err := ParseArgoTrackingID(v)
	if err != nil || !id.Refers(gk, namespace, name) {
		return ""
	}
	return id.App
}
