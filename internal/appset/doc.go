// Package appset reads Argo CD ApplicationSets (argoproj.io/v1alpha1,
// kind ApplicationSet) and turns one into the applications it declares.
//
// Parse reads the YAML strictly: a field Windlass does not know, or a
// generator it does not build, is an error naming the field. Evaluator.Generate
// evaluates the generators (list, clusters, git directories and files,
// matrix, merge, plugin, pull request and SCM provider for GitHub, GitLab
// and Gitea) into parameter sets, renders the template for each set
// (fasttemplate {{a.b}} placeholders, or Go templates with goTemplate: true
// and Argo CD's function set), applies templatePatch, and converts each
// result with appspec.ParseApplication.
//
// Every side effect goes through an interface the caller injects: the
// registered clusters, a Git tree reader, a secret reader for tokens and
// plugin settings (resolved by reference, at evaluation, never carried in
// the set or its results) and an HTTP client. Generate writes nothing; a
// bad set (an invalid or duplicate app name, more elements than the limit,
// a plugin that times out, a provider API that fails) is an error and no
// applications.
package appset
