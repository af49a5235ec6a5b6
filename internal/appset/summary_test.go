package appset

import (
	"encoding/json"
	"testing"
)

func TestSummary(t *testing.T) {
	tests := []struct {
		generator string
		want      string
	}{
		{`{"list": {"elements": [{"a": 1}, {"a": 2}]}}`, "list (2 elements)"},
		{`{"list": {"elements": [{"a": 1}]}}`, "list (1 element)"},
		{`{"clusters": {}}`, "clusters"},
		{`{"git": {"repoURL": "https://git.example/team/envs.git", "directories": [{"path": "apps/*"}, {"path": "apps/old", "exclude": true}]}}`, "git directories envs apps/*"},
		{`{"git": {"repoURL": "https://git.example/cfg/", "files": [{"path": "**/config.json"}]}}`, "git files cfg **/config.json"},
		{`{"git": {"repoURL": "git@git.example:a/c.git"}}`, "git directories c"},
		{`{"matrix": {"generators": [{"clusters": {}}, {"git": {"repoURL": "r.git", "directories": [{"path": "*"}]}}]}}`, "matrix (clusters × git directories r *)"},
		{`{"merge": {"generators": [{"clusters": {}}, {"list": {"elements": []}}]}}`, "merge (clusters + list (0 elements))"},
		{`{"plugin": {"configMapRef": {"name": "my-plugin"}}}`, "plugin my-plugin"},
		{`{"pullRequest": {}}`, "pull requests"},
		{`{"scmProvider": {}}`, "SCM provider"},
		{`{"clusterDecisionResource": {"configMapRef": "x"}}`, "cluster decision resource"},
		{`{}`, "unknown"},
	}
	for _, tt := range tests {
		var g Generator
		if err := json.Unmarshal([]byte(tt.generator), &g); err != nil {
			t.Fatalf("%s: %v", tt.generator, err)
		}
		if got := Summary(g); got != tt.want {
			t.Errorf("Summary(%s) = %q, want %q", tt.generator, got, tt.want)
		}
	}
}
