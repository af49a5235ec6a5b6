package manifest

import (
	"encoding/base64"
	"slices"
	"strings"
)

// lastApplied is kubectl's annotation holding the whole applied object,
// Secret values included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// MaskSecrets replaces the values of every Secret among objs (data and
// stringData) with runs of '+', as Argo CD does, so that a diff or a
// manifest never shows them. The masks are consistent across the objects
// passed together: equal values (compared decoded, so data and stringData
// agree) get the same mask and different values different ones, which
// keeps a diff of the live and desired Secret meaningful. It also drops
// the last-applied annotation of a Secret, which repeats its values.
// Objects that are not Secrets, and nil ones, are left alone. It modifies
// objs in place.
func MaskSecrets(objs ...map[string]any) {
	var secrets []map[string]any
	for _, o := range objs {
		if isSecret(o) {
			secrets = append(secrets, o)
		}
	}
	if len(secrets) == 0 {
		return
	}
	masks := map[string]string{}
	maskOf := func(v string) string {
		m, ok := masks[v]
		if !ok {
			m = strings.Repeat("+", 8+len(masks))
			masks[v] = m
		}
		return m
	}
	for _, o := range secrets {
		for _, field := range []string{"data", "stringData"} {
			values, ok := o[field].(map[string]any)
			if !ok {
				continue
			}
			keys := make([]string, 0, len(values))
			for k := range values {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				values[k] = maskOf(plainValue(field, values[k]))
			}
		}
		if md, ok := o["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok {
				delete(ann, lastApplied)
				if len(ann) == 0 {
					delete(md, "annotations")
				}
			}
		}
	}
}

func isSecret(o map[string]any) bool {
	if o == nil {
		return false
	}
	kind, _ := o["kind"].(string)
	apiVersion, _ := o["apiVersion"].(string)
	return kind == "Secret" && (apiVersion == "v1" || apiVersion == "")
}

// plainValue is a Secret value as the container sees it: data is base64
// (left as it is when it does not decode), stringData plain text.
func plainValue(field string, v any) string {
	s, _ := v.(string)
	if field == "data" {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return string(b)
		}
	}
	return s
}
