package appspec

import "fmt"

// ignoredKustomize are Argo CD Kustomize options that Windlass accepts
// and does not act on, with why.
var ignoredKustomize = []struct{ field, why string }{
	{"version", "Windlass builds with its in-process Kustomize, not one of Argo CD's configured binaries"},
	{"kubeVersion", "it reaches only the Helm charts a kustomization inflates (helmCharts), which take the worker's --kustomize-build-options instead"},
	{"apiVersions", "it reaches only the Helm charts a kustomization inflates (helmCharts), which take the worker's --kustomize-build-options instead"},
}

// ArgoWarnings lists the fields of an Argo CD Application document that
// ParseApplication accepts without effect, each as "<field>: ignored:
// <why>". A document that does not parse, or is not an Argo CD
// Application, has none.
func ArgoWarnings(data []byte) []string {
	doc, err := readDocument(data)
	if err != nil {
		return nil
	}
	if isArgo, err := doc.argoKind(argoKindApp); err != nil || !isArgo {
		return nil
	}
	spec, _ := doc.obj["spec"].(map[string]any)
	var out []string
	check := func(field string, src any) {
		s, _ := src.(map[string]any)
		k, _ := s["kustomize"].(map[string]any)
		for _, f := range ignoredKustomize {
			if v, ok := k[f.field]; ok && v != nil && v != "" {
				out = append(out, fmt.Sprintf("%s.kustomize.%s: ignored: %s", field, f.field, f.why))
			}
		}
	}
	check("spec.source", spec["source"])
	srcs, _ := spec["sources"].([]any)
	for i, s := range srcs {
		check(fmt.Sprintf("spec.sources[%d]", i), s)
	}
	return out
}
