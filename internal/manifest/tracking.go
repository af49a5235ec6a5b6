package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TrackingAnnotation marks an object as managed by one application. Its
// value is <project>/<app>:<group>/<Kind>:<namespace>/<name>. It is the
// only proof of ownership.
const TrackingAnnotation = "windlass.dev/tracking-id"

// AppLabel indexes the objects of one application so that they can be
// listed and watched with a label selector. It is only an index: an object
// belongs to an app when its TrackingAnnotation says so.
const AppLabel = "windlass.dev/app"

// Hook bookkeeping stamped on every hook Windlass creates.
const (
	// SyncIDLabel holds SyncIDHash of the sync that created the hook.
	SyncIDLabel = "windlass.dev/sync-id"
	// SyncIDAnnotation holds the sync ID itself.
	SyncIDAnnotation = "windlass.dev/sync-id"
	// HookPhaseAnnotation holds the phase the hook was created for.
	HookPhaseAnnotation = "windlass.dev/hook-phase"
)

// TrackingID builds the tracking annotation value for obj in app.
func TrackingID(project, app string, obj *unstructured.Unstructured) string {
	return TrackingIDOf(project, app, obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName())
}

// TrackingIDOf is the tracking annotation's value for the object of kind
// gk named namespace/name (TrackingID).
func TrackingIDOf(project, app string, gk schema.GroupKind, namespace, name string) string {
	return fmt.Sprintf("%s/%s:%s/%s:%s/%s", project, app, gk.Group, gk.Kind, namespace, name)
}

// AppLabelValue is the AppLabel value of an app: "<project>.<app>" when
// that fits a label value (63 characters), else a digest of it. A project
// name has no dot, so the first dot ends it and app names with dots cannot
// collide; a digest has no dot, so it never equals a readable value.
func AppLabelValue(project, app string) string {
	v := project + "." + app
	if len(v) <= 63 {
		return v
	}
	return digest(project+"/"+app, 40)
}

// SetTracking stamps the tracking annotation and the app label on obj.
func SetTracking(project, app string, obj *unstructured.Unstructured) {
	setAnnotation(obj, TrackingAnnotation, TrackingID(project, app, obj))
	setLabel(obj, AppLabel, AppLabelValue(project, app))
}

// OwnerApp returns "<project>/<app>" from obj's tracking annotation, or "".
func OwnerApp(obj *unstructured.Unstructured) string {
	v := obj.GetAnnotations()[TrackingAnnotation]
	owner, _, ok := strings.Cut(v, ":")
	if !ok {
		return ""
	}
	return owner
}

// OwnedBy reports whether obj's tracking annotation names app and obj
// itself; an annotation copied onto another object does not count.
func OwnedBy(project, app string, obj *unstructured.Unstructured) bool {
	v, ok := obj.GetAnnotations()[TrackingAnnotation]
	return ok && v == TrackingID(project, app, obj)
}

// SyncIDHash is the label value that names a sync on its hooks.
func SyncIDHash(syncID string) string { return digest(syncID, 20) }

// HookName is the name of a hook created by a sync in phase: its own name,
// or for a hook with only generateName, generateName plus a digest of the
// sync ID and phase, so that a retried apply finds the same object.
func HookName(obj *unstructured.Unstructured, syncID, phase string) string {
	if n := obj.GetName(); n != "" {
		return n
	}
	return obj.GetGenerateName() + digest(syncID+"/"+phase, 10)
}

// StampHook names obj for syncID and phase (see HookName) and marks it
// with the sync ID and phase; call it before SetTracking.
func StampHook(obj *unstructured.Unstructured, syncID, phase string) {
	obj.SetName(HookName(obj, syncID, phase))
	obj.SetGenerateName("")
	setLabel(obj, SyncIDLabel, SyncIDHash(syncID))
	setAnnotation(obj, SyncIDAnnotation, syncID)
	setAnnotation(obj, HookPhaseAnnotation, phase)
}

// CreatedBy reports whether obj is the hook that syncID created for phase.
func CreatedBy(obj *unstructured.Unstructured, syncID, phase string) bool {
	ann := obj.GetAnnotations()
	return ann[SyncIDAnnotation] == syncID && ann[HookPhaseAnnotation] == phase
}

func digest(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

func setAnnotation(obj *unstructured.Unstructured, k, v string) {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[k] = v
	obj.SetAnnotations(ann)
}

func setLabel(obj *unstructured.Unstructured, k, v string) {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[k] = v
	obj.SetLabels(l)
}
