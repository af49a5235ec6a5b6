package appspec

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// defaultPorts are the ports a repository URL may leave out, by scheme.
var defaultPorts = map[string]string{
	"http":    "80",
	"https":   "443",
	"ssh":     "22",
	"git+ssh": "22",
	"ssh+git": "22",
	"git":     "9418",
}

// NormalizeRepoURL reduces a Git repository URL to "host[:port]/path" so that
// every form of one repository compares equal: it lower-cases the URL, drops
// the scheme, user info, a default port, query and fragment, a trailing ".git"
// and trailing slashes, and turns the scp-like "git@host:org/repo" into
// "host/org/repo". So "https://GitHub.com/Org/Repo.git",
// "git@github.com:org/repo" and "ssh://git@github.com/org/repo" all become
// "github.com/org/repo". A non-default port is kept: it may be another server.
func NormalizeRepoURL(u string) string {
	s := strings.ToLower(strings.TrimSpace(u))
	if s == "" {
		return ""
	}
	host, path := splitRepoURL(s)
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	if host == "" {
		return path
	}
	if path == "" {
		return host
	}
	return host + "/" + path
}

// splitRepoURL splits a lower-cased repository URL into its host (with a
// non-default port) and its path.
func splitRepoURL(s string) (host, path string) {
	if !strings.Contains(s, "://") {
		// scp-like syntax, [user@]host:path, as git reads it: a colon before
		// any slash.
		if i := strings.IndexByte(s, ':'); i > 0 && !strings.Contains(s[:i], "/") {
			h := s[:i]
			if at := strings.LastIndexByte(h, '@'); at >= 0 {
				h = h[at+1:]
			}
			return h, s[i+1:]
		}
		// "host/org/repo", already without a scheme.
		return "", s
	}
	pu, err := url.Parse(s)
	if err != nil {
		// Not a URL Go can parse: drop the scheme and user info by hand.
		_, rest, _ := strings.Cut(s, "://")
		if slash := strings.IndexByte(rest, '/'); slash >= 0 {
			if at := strings.LastIndexByte(rest[:slash], '@'); at >= 0 {
				rest = rest[at+1:]
			}
		}
		return "", rest
	}
	host = pu.Hostname()
	if port := pu.Port(); port != "" && port != defaultPorts[pu.Scheme] {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 without its port
	}
	return host, pu.Path
}

// RepoURLHasPassword reports whether u carries user:password@ before its
// host. Such a URL would store the password in plain text wherever the URL
// goes; callers refuse it without echoing it.
func RepoURLHasPassword(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		// Not parseable: look for user:password@ before the host by hand.
		_, rest, ok := strings.Cut(u, "://")
		at := strings.LastIndexByte(rest, '@')
		return ok && at > 0 && strings.Contains(rest[:at], ":") && !strings.Contains(rest[:at], "/")
	}
	if pu.User == nil {
		return false
	}
	_, set := pu.User.Password()
	return set
}

// IsOCIRepoURL reports whether u names an OCI repository (oci://...):
// a source whose revision is a tag, a semver range or a digest.
func IsOCIRepoURL(u string) bool {
	return len(u) > 6 && strings.EqualFold(u[:6], "oci://")
}

// AllowedTransports are the Git transports a repository URL may use.
const AllowedTransports = "https, http, ssh (ssh:// or user@host:path), git and file"

// CheckRepoTransport refuses a repository URL whose transport is not one
// of AllowedTransports, such as git's "ext::<command>" remote helpers,
// which a Git client would otherwise take for an scp-like SSH address. A
// URL without a scheme is an scp-like SSH address or a local path.
func CheckRepoTransport(u string) error {
	if name, _, ok := strings.Cut(u, "::"); ok && !strings.ContainsAny(name, "/@") {
		return fmt.Errorf("transport %q is not allowed; use %s", name, AllowedTransports)
	}
	scheme, _, ok := strings.Cut(u, "://")
	if !ok || strings.ContainsAny(scheme, "/@:") {
		return nil
	}
	switch strings.ToLower(scheme) {
	case "https", "http", "ssh", "git", "file":
		if _, err := url.Parse(u); err != nil {
			return fmt.Errorf("repository URL: %w", err)
		}
		return nil
	}
	return fmt.Errorf("transport %q is not allowed; use %s", scheme, AllowedTransports)
}
