// Package children carries out the apps and projects that an app's
// manifests declare (app of apps): it implements cluster.Declarations on
// the Temporal client and the settings store.
//
// A declared Application becomes an app workflow, created or updated by
// the Update-With-Start of setSpec that the API uses, with the parent
// recorded in the child's spec (appspec.ManagedBy) and in the
// WindlassParent search attribute, by which a parent lists its children.
// A declared AppProject becomes a stored project annotated with its
// parent (AnnotationManagedBy). Declarations that would escalate
// privileges, form a cycle or take another app's name are refused.
package children
