package appspec

import (
	"strings"
	"testing"
)

func TestNormalizeRepoURL(t *testing.T) {
	const want = "github.com/org/repo"
	tests := []struct {
		in, want string
	}{
		{"https://GitHub.com/Org/Repo.git", want},
		{"https://github.com/org/repo", want},
		{"https://github.com/org/repo/", want},
		{"https://github.com/org/repo.git/", want},
		{"http://github.com/org/repo", want},
		{"https://user:token@github.com/org/repo.git", want},
		{"https://github.com:443/org/repo", want},
		{"http://github.com:80/org/repo", want},
		{"https://github.com/org/repo?ref=main#readme", want},
		{"git@github.com:org/repo", want},
		{"git@github.com:org/repo.git", want},
		{"git@github.com:/org/repo.git", want},
		{"github.com:org/repo", want},
		{"ssh://git@github.com/org/repo", want},
		{"ssh://git@github.com:22/org/repo.git", want},
		{"git+ssh://git@github.com/org/repo.git", want},
		{"git://github.com/org/repo.git", want},
		{"git://github.com:9418/org/repo.git", want},
		{"  https://github.com/org/repo.git  ", want},
		{"github.com/org/repo", want},
		{"GitHub.com/Org/Repo.git", want},
		// A non-default port names another server: it stays.
		{"ssh://git@bitbucket.example.com:7999/plat/apps.git", "bitbucket.example.com:7999/plat/apps"},
		{"https://git.example.com:8443/org/repo", "git.example.com:8443/org/repo"},
		{"http://git.example.com:443/org/repo", "git.example.com:443/org/repo"},
		// Nested groups and Bitbucket Server's /scm/ prefix are paths.
		{"https://gitlab.example.com/infra/team/platform-config.git", "gitlab.example.com/infra/team/platform-config"},
		{"https://bitbucket.example.com/scm/plat/apps.git", "bitbucket.example.com/scm/plat/apps"},
		// IPv6 hosts keep their brackets.
		{"ssh://git@[2001:db8::1]:22/org/repo.git", "[2001:db8::1]/org/repo"},
		{"ssh://git@[2001:db8::1]:2222/org/repo.git", "[2001:db8::1]:2222/org/repo"},
		{"", ""},
		{"   ", ""},
	}
	for _, tt := range tests {
		if got := NormalizeRepoURL(tt.in); got != tt.want {
			t.Errorf("NormalizeRepoURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeRepoURLKeepsReposApart(t *testing.T) {
	distinct := []string{
		"https://github.com/org/repo",
		"https://github.com/org/repo2",
		"https://github.com/other/repo",
		"https://gitlab.com/org/repo",
		"https://github.com:8443/org/repo",
		"https://github.com/org/repo/sub",
	}
	seen := map[string]string{}
	for _, u := range distinct {
		n := NormalizeRepoURL(u)
		if prev, ok := seen[n]; ok {
			t.Errorf("%q and %q both normalise to %q", prev, u, n)
		}
		seen[n] = u
	}
}

func TestCheckRepoTransport(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://github.com/org/repo.git", true},
		{"HTTP://git.test/r", true},
		{"ssh://git@github.com/org/repo", true},
		{"git@github.com:org/repo.git", true},
		{"git://git.test/r", true},
		{"file:///srv/git/r", true},
		{"/srv/git/r", true},
		{"ext::sh -c touch% /tmp/pwned", false},
		{"fd::17", false},
		{"ftp://git.test/r", false},
		{"gopher://git.test/r", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckRepoTransport(tc.url)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckRepoTransport(%q) = %v, want ok %v", tc.url, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "is not allowed") {
				t.Fatalf("error %q does not say the transport is not allowed", err)
			}
		})
	}
}
