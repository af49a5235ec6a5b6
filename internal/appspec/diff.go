package appspec

import "path"

// ResourceIgnoreDifferences tells the diff to ignore some fields of the
// resources it matches, as Argo CD's spec.ignoreDifferences. Group and Kind
// must match (either may be "*"); Name and Namespace match any resource
// when empty. Fields are named by JSON pointers (RFC 6901), jq path
// expressions (".spec.template.spec.containers[] | select(.name == \"x\") | .image"),
// or the field managers whose fields are ignored.
type ResourceIgnoreDifferences struct {
	Group                 string   `json:"group,omitempty"`
	Kind                  string   `json:"kind"`
	Name                  string   `json:"name,omitempty"`
	Namespace             string   `json:"namespace,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// Matches reports whether the rule applies to the resource key (globs
// allowed in every part of the rule).
func (r ResourceIgnoreDifferences) Matches(k ResourceKey) bool {
	match := func(pattern, v string, emptyIsAny bool) bool {
		if pattern == "" {
			return emptyIsAny || v == ""
		}
		ok, err := path.Match(pattern, v)
		return err == nil && ok
	}
	return match(r.Group, k.Group, false) && match(r.Kind, k.Kind, false) &&
		match(r.Name, k.Name, true) && match(r.Namespace, k.Namespace, true)
}

// ManagedNamespaceMetadata is put on the destination namespace that the
// CreateNamespace=true sync option creates (Argo CD's
// syncPolicy.managedNamespaceMetadata).
type ManagedNamespaceMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}
