// Package customizations loads resource customizations in Argo CD's
// formats: a resource_customizations tree (health.lua and actions/ per
// <group>/<Kind>), from a local directory or a Git checkout, and the
// resource.* keys of an argocd-cm ConfigMap.
//
// A Set is what one load produced: the health checker and the action
// scripts, kept as source for the resource actions (this package does not
// run them). A Library serves the current Set and loads a new one when its
// source's revision moves. A load that fails (the source cannot be read, a
// script does not compile) leaves the last good Set in place, and the
// Library's Status says why. Inline scripts from argocd-cm take precedence
// over the tree's.
package customizations
