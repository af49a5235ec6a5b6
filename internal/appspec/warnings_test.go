package appspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgoWarnings(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{name: "none", doc: "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  source: {repoURL: r, kustomize: {namePrefix: x-}}\n"},
		{name: "kustomize version", doc: "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  source: {repoURL: r, kustomize: {version: v5.4.3}}\n",
			want: []string{"spec.source.kustomize.version: ignored: Windlass builds with its in-process Kustomize, not one of Argo CD's configured binaries"}},
		{name: "second source", doc: "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  sources:\n  - {repoURL: r}\n  - {repoURL: s, kustomize: {kubeVersion: '1.31', apiVersions: [v1]}}\n",
			want: []string{
				"spec.sources[1].kustomize.kubeVersion: ignored: it reaches only the Helm charts a kustomization inflates (helmCharts), which take the worker's --kustomize-build-options instead",
				"spec.sources[1].kustomize.apiVersions: ignored: it reaches only the Helm charts a kustomization inflates (helmCharts), which take the worker's --kustomize-build-options instead",
			}},
		{name: "Windlass's own spec", doc: `{"name":"a","source":{"repoURL":"r","kustomize":{"version":"v5"}}}`},
		{name: "not a document", doc: "{"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, ArgoWarnings([]byte(tt.doc))); d != "" {
				t.Errorf("ArgoWarnings (-want +got):\n%s", d)
			}
		})
	}
}
