package appset

import (
	"fmt"
	"strings"
)

// Summary names a generator for people: its kind and what it reads, as
// the set list shows it ("git directories envs apps/*").
func Summary(g Generator) string {
	switch {
	case g.List != nil:
		n := len(g.List.Elements)
		if n == 1 {
			return "list (1 element)"
		}
		return fmt.Sprintf("list (%d elements)", n)
	case g.Clusters != nil:
		return "clusters"
	case g.Git != nil:
		kind, paths := "git directories", g.Git.Directories
		if len(g.Git.Files) > 0 {
			kind, paths = "git files", g.Git.Files
		}
		out := kind + " " + repoName(g.Git.RepoURL)
		var shown []string
		for _, p := range paths {
			if !p.Exclude {
				shown = append(shown, p.Path)
			}
		}
		if len(shown) > 0 {
			out += " " + strings.Join(shown, ", ")
		}
		return out
	case g.Matrix != nil:
		return "matrix (" + strings.Join(summaries(g.Matrix.Generators), " × ") + ")"
	case g.Merge != nil:
		return "merge (" + strings.Join(summaries(g.Merge.Generators), " + ") + ")"
	case g.Plugin != nil:
		if g.Plugin.ConfigMapRef.Name != "" {
			return "plugin " + g.Plugin.ConfigMapRef.Name
		}
		return "plugin"
	case g.PullRequest != nil:
		return "pull requests"
	case g.SCMProvider != nil:
		return "SCM provider"
	case len(g.ClusterDecisionResource) > 0:
		return "cluster decision resource"
	}
	return "unknown"
}

// GeneratorSummaries are the summaries of a set's generators, one each.
func GeneratorSummaries(set ApplicationSet) []string { return summaries(set.Spec.Generators) }

func summaries(gs []Generator) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = Summary(g)
	}
	return out
}

// repoName is the last part of a repository URL, without ".git".
func repoName(url string) string {
	url = strings.TrimRight(url, "/")
	if i := strings.LastIndexAny(url, "/:"); i >= 0 {
		url = url[i+1:]
	}
	return strings.TrimSuffix(url, ".git")
}
