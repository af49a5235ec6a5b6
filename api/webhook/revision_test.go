package webhook

import "testing"

func TestRevisionMatches(t *testing.T) {
	branch := func(name, def string) Push { return Push{Ref: "refs/heads/" + name, DefaultBranch: def} }
	tag := func(name string) Push { return Push{Ref: "refs/tags/" + name, DefaultBranch: "main"} }
	tests := []struct {
		name   string
		target string
		push   Push
		want   bool
	}{
		{"empty follows the default branch", "", branch("main", "main"), true},
		{"HEAD follows the default branch", "HEAD", branch("main", "main"), true},
		{"HEAD ignores another branch", "HEAD", branch("feature", "main"), false},
		{"HEAD ignores a tag", "HEAD", tag("v1.0.0"), false},
		{"empty ignores a tag", "", tag("v1.0.0"), false},
		{"HEAD with an unknown default branch matches any branch", "HEAD", branch("feature", ""), true},
		{"empty with an unknown default branch matches any branch", "", branch("main", ""), true},
		{"surrounding space is ignored", " HEAD ", branch("main", "main"), true},

		{"branch name", "main", branch("main", "main"), true},
		{"branch name with slashes", "release/2024.05", branch("release/2024.05", ""), true},
		{"full branch ref", "refs/heads/main", branch("main", "main"), true},
		{"other branch", "main", branch("develop", "main"), false},
		{"branch names are case-sensitive", "Main", branch("main", "main"), false},
		{"branch name does not match a tag of that name", "refs/heads/v1.0.0", tag("v1.0.0"), false},
		{"full branch ref does not match a prefix", "refs/heads/main", branch("main-2", "main"), false},

		{"tag name", "v1.4.2", tag("v1.4.2"), true},
		{"full tag ref", "refs/tags/v1.4.2", tag("v1.4.2"), true},
		{"full tag ref does not match a branch", "refs/tags/main", branch("main", "main"), false},
		{"other tag", "v1.4.2", tag("v1.4.3"), false},
		{"non-semver tag", "prod-2024", tag("prod-2024"), true},
		{"tag name does not match a branch", "v1.4.2", branch("v1.4.3", ""), false},

		{"full SHA-1 is pinned", "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", branch("main", "main"), false},
		{"full SHA-1 is pinned even named like a branch", "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
			branch("0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", ""), false},
		{"full SHA-256 is pinned", "3b2c1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b", tag("v1.0.0"), false},
		{"short hex is a name", "abc1234", branch("abc1234", ""), true},

		{"wildcard constraint", "1.2.*", tag("v1.2.7"), true},
		{"wildcard constraint without v", "1.2.*", tag("1.2.7"), true},
		{"wildcard constraint, other minor", "1.2.*", tag("v1.3.0"), false},
		{"range constraint", ">=1.0.0", tag("v2.5.0"), true},
		{"range constraint below", ">=1.0.0", tag("v0.9.0"), false},
		{"tilde constraint", "~1.2", tag("v1.2.9"), true},
		{"tilde constraint, next minor", "~1.2", tag("v1.3.0"), false},
		{"caret constraint", "^2.0.0", tag("v2.9.1"), true},
		{"compound constraint", ">=1.2.0, <1.3.0", tag("v1.2.4"), true},
		{"compound constraint outside", ">=1.2.0, <1.3.0", tag("v1.3.0"), false},
		{"exact version matches the v-prefixed tag", "1.4.2", tag("v1.4.2"), true},
		{"constraint ignores a non-version tag", ">=1.0.0", tag("latest"), false},
		{"constraint ignores a branch", "1.2.*", branch("1.2.x", "main"), false},
		{"constraint ignores a branch named like a version", ">=1.0.0", branch("2.0.0", "main"), false},

		{"unknown revision", "stable", branch("main", "main"), false},
		{"unknown revision against a tag", "stable", tag("v1.0.0"), false},
		{"push of neither branch nor tag", "HEAD", Push{Ref: "refs/notes/commits"}, false},
		{"push without a ref", "", Push{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RevisionMatches(tt.target, tt.push); got != tt.want {
				t.Errorf("RevisionMatches(%q, %s) = %v, want %v", tt.target, tt.push.Ref, got, tt.want)
			}
		})
	}
}
