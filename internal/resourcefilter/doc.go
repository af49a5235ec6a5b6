// Package resourcefilter decides which resource kinds Windlass manages on
// which cluster, from argocd-cm's resource.exclusions and
// resource.inclusions.
//
// A Rule holds globs of API groups, kinds and cluster URLs; an empty list
// matches anything. A kind is excluded on a cluster when an exclusion
// matches it, or when some inclusion names that cluster and none matches
// the kind. An excluded kind is not listed, watched, compared, applied or
// pruned. The zero Filter and a nil *Filter exclude nothing.
package resourcefilter
