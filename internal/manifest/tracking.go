package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TrackingAnnotation marks an object as managed by one application. Its
// value is <project>/<app>:<group>/<Kind>:<namespace>/<name>.
const TrackingAnnotation = "windlass.dev/tracking-id"

// TrackingID builds the tracking annotation value for obj in app.
func TrackingID(project, app string, obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return fmt.Sprintf("%s/%s:%s/%s:%s/%s", project, app, gvk.Group, gvk.Kind, obj.GetNamespace(), obj.GetName())
}

// SetTracking stamps the tracking annotation on obj.
func SetTracking(project, app string, obj *unstructured.Unstructured) {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[TrackingAnnotation] = TrackingID(project, app, obj)
	obj.SetAnnotations(ann)
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
