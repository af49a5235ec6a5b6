package manifest

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Per-resource option annotations of Argo CD.
const (
	SyncOptionsAnnotation    = "argocd.argoproj.io/sync-options"
	CompareOptionsAnnotation = "argocd.argoproj.io/compare-options"
)

// Options are sync or compare options ("Key=Value", or a bare "Key")
// by key. Later sources override earlier ones.
type Options map[string]string

// ParseOptions merges option lists; a later list overrides an earlier one
// key by key. A bare word (IgnoreExtraneous) is stored with the value "true".
func ParseOptions(lists ...[]string) Options {
	o := Options{}
	for _, list := range lists {
		for _, item := range list {
			k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
			if k = strings.TrimSpace(k); k == "" {
				continue
			}
			if !ok {
				v = "true"
			}
			o[k] = strings.TrimSpace(v)
		}
	}
	return o
}

// SyncOptionsOf returns obj's sync-options annotation as a list.
func SyncOptionsOf(obj *unstructured.Unstructured) []string {
	return csv(obj.GetAnnotations()[SyncOptionsAnnotation])
}

// CompareOptionsOf returns obj's compare-options annotation as a list.
func CompareOptionsOf(obj *unstructured.Unstructured) []string {
	return csv(obj.GetAnnotations()[CompareOptionsAnnotation])
}

// Is reports whether key is set to value (case-insensitive value).
func (o Options) Is(key, value string) bool { return strings.EqualFold(o[key], value) }

// True reports whether key is "true".
func (o Options) True(key string) bool { return o.Is(key, "true") }
