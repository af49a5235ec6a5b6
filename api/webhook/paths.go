package webhook

import (
	"path"
	"slices"
	"strings"
)

// pushCommit is a commit of a GitHub, Gitea or GitLab push, with the files
// it changed.
type pushCommit struct {
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Removed  []string `json:"removed"`
}

// changedFiles lists the distinct files the commits change, nil when they
// list none.
func changedFiles(commits []pushCommit) []string {
	var out []string
	for _, c := range commits {
		for _, f := range slices.Concat(c.Added, c.Modified, c.Removed) {
			if f = strings.TrimPrefix(f, "/"); f != "" && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// touches says the push changes a file under one of paths (repository
// paths, "" for the root; a path may be a glob). A push that does not list
// its files, or an app that names no paths, always matters.
func touches(paths []string, p Push) bool {
	if len(paths) == 0 || len(p.Files) == 0 {
		return true
	}
	for _, f := range p.Files {
		for _, dir := range paths {
			if dir == "" || f == dir || strings.HasPrefix(f, dir+"/") {
				return true
			}
			if ok, _ := path.Match(dir, f); ok {
				return true
			}
		}
	}
	return false
}
