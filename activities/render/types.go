package render

import "github.com/windlass-cd/windlass/internal/appspec"

// Request says what to render. Every field takes part in the cache key.
type Request struct {
	// AppName is the default Helm release name.
	AppName string `json:"appName"`
	// Namespace is the destination namespace (Helm's release namespace and
	// the namespace Kustomize and plugins are told about).
	Namespace string `json:"namespace,omitempty"`
	// Sources are rendered in order and their manifests concatenated. A
	// source with a Ref and neither Path nor Chart only lends its files to
	// the others ($ref/ value files).
	Sources []SourceRequest `json:"sources"`
	// Tool forces a tool for every source (the render CLI's --tool).
	Tool string `json:"tool,omitempty"`
	// SignatureKeys are the project's GPG key IDs (upper case): each Git
	// source's commit must be signed by one of them. None: no check.
	SignatureKeys []string `json:"signatureKeys,omitempty"`
	// Scope is the app's project: each Git submodule checked out must be
	// one of its sourceRepos, as the app's sources are. Nil: no check
	// beyond the worker's --git-submodule-repos (the render CLI).
	Scope *SourceScope `json:"scope,omitempty"`
}

// SourceScope is the part of a project that limits the repositories a
// render reads.
type SourceScope struct {
	Project     string   `json:"project"`
	SourceRepos []string `json:"sourceRepos"`
}

// ScopeOf is the scope of project p.
func ScopeOf(p appspec.Project) *SourceScope {
	return &SourceScope{Project: p.Name, SourceRepos: p.SourceRepos}
}

// SourceRequest is a source with its revision resolved.
type SourceRequest struct {
	appspec.Source
	// SHA is the resolved commit of a Git source, or the resolved chart
	// version of a source with a Chart.
	SHA string `json:"sha"`
}

// RefOnly reports whether the source only lends its files to others.
func (s SourceRequest) RefOnly() bool {
	return s.Ref != "" && s.Path == "" && s.Chart == ""
}

// SingleSource is the request of a one-source application.
func SingleSource(appName, namespace string, src appspec.Source, sha string) Request {
	return Request{AppName: appName, Namespace: namespace, Sources: []SourceRequest{{Source: src, SHA: sha}}}
}

// ManifestRef points at rendered manifests in the cache.
type ManifestRef struct {
	Key string `json:"key"`
	// SHA is the resolved revision of the first rendered source.
	SHA     string  `json:"sha"`
	Count   int     `json:"count"`
	Digest  string  `json:"digest"`
	Request Request `json:"request"`
	// RevisionMetadata describes SHA's commit when the worker knows it
	// (a Git source; not a chart version).
	RevisionMetadata *appspec.RevisionMetadata `json:"revisionMetadata,omitempty"`
}

// RenderInput is the input of the Render activity.
type RenderInput struct {
	Request Request `json:"request"`
	// Hard bypasses the cache.
	Hard bool `json:"hard,omitempty"`
}

func (r Request) firstSHA() string {
	if s, ok := r.first(); ok {
		return s.SHA
	}
	return ""
}

// first is the first source that renders.
func (r Request) first() (SourceRequest, bool) {
	for _, s := range r.Sources {
		if !s.RefOnly() {
			return s, true
		}
	}
	return SourceRequest{}, false
}
