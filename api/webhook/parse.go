package webhook

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
)

// Providers, as Push.Provider names them.
const (
	providerGitHub          = "github"
	providerGitLab          = "gitlab"
	providerBitbucket       = "bitbucket"
	providerBitbucketServer = "bitbucket-server"
)

// Request headers.
const (
	headerGitHubEvent     = "X-GitHub-Event"
	headerGitHubSignature = "X-Hub-Signature-256"
	headerGitLabEvent     = "X-Gitlab-Event"
	headerGitLabToken     = "X-Gitlab-Token"
	headerBitbucketEvent  = "X-Event-Key"
	headerBitbucketSig    = "X-Hub-Signature"
)

// ErrNotPush is returned, wrapped with the provider and event, by Parse for a
// verified delivery of an event that is not a push (a pull request, an
// issue...). It refreshes nothing.
var ErrNotPush = errors.New("not a push event")

// Secrets are the webhook secrets, one per provider. A provider without one
// has every delivery rejected.
type Secrets struct {
	// GitHub keys the HMAC-SHA256 in X-Hub-Signature-256.
	GitHub string
	// GitLab is the token GitLab sends in X-Gitlab-Token.
	GitLab string
	// Bitbucket keys the HMAC-SHA256 in X-Hub-Signature, for Bitbucket Cloud
	// and Bitbucket Server/Data Center.
	Bitbucket string
}

// String masks the secrets, so that printing a configuration leaks nothing.
func (s Secrets) String() string {
	return fmt.Sprintf("github=%s gitlab=%s bitbucket=%s", mask(s.GitHub), mask(s.GitLab), mask(s.Bitbucket))
}

// LogValue masks the secrets in slog output.
func (s Secrets) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String(providerGitHub, mask(s.GitHub)),
		slog.String(providerGitLab, mask(s.GitLab)),
		slog.String(providerBitbucket, mask(s.Bitbucket)),
	)
}

func mask(secret string) string {
	if secret == "" {
		return "unset"
	}
	return "set"
}

// Push is one ref update a verified webhook reports.
type Push struct {
	// Provider is "github", "gitlab", "bitbucket" (Cloud) or
	// "bitbucket-server" (Server/Data Center).
	Provider string
	// RepoURLs holds every URL form of the repository the payload gives (web,
	// HTTP clone, SSH), as given, without duplicates.
	RepoURLs []string
	// Ref is the full ref, "refs/heads/<branch>" or "refs/tags/<tag>".
	Ref string
	// After is the SHA the ref points to after the push, as the provider
	// reports it (for an annotated tag it may be the tag object); empty when
	// the push deleted the ref.
	After string
	// DefaultBranch is the repository's default branch, empty when the
	// payload does not say (Bitbucket).
	DefaultBranch string
	// Files are the paths, from the repository's root, that the push's
	// commits add, modify or remove; nil when the payload does not list
	// them (Bitbucket, a new tag).
	Files []string
}

// Parse verifies a webhook delivery against secrets and returns the ref
// updates it reports. The provider is told by the event header; body is the
// raw request body, which the signatures cover.
//
// A ping returns no pushes and no error. A verified event that is not a push
// returns an error wrapping ErrNotPush. Every other error is an
// *echo.HTTPError: 401 for a missing or wrong signature or token, or a
// provider without a secret; 400 for a request from no known provider or a
// malformed push payload.
func Parse(r *http.Request, body []byte, secrets Secrets) ([]Push, error) {
	provider, event := detect(r.Header)
	switch provider {
	case providerGitHub:
		if err := verifyHMAC(provider, secrets.GitHub, headerGitHubSignature, r.Header, body); err != nil {
			return nil, err
		}
		return parseGitHub(event, r.Header.Get(echo.HeaderContentType), body)
	case providerGitLab:
		if err := verifyToken(provider, secrets.GitLab, r.Header.Get(headerGitLabToken)); err != nil {
			return nil, err
		}
		return parseGitLab(event, body)
	case providerBitbucket:
		if err := verifyHMAC(provider, secrets.Bitbucket, headerBitbucketSig, r.Header, body); err != nil {
			return nil, err
		}
		return parseBitbucket(event, body)
	}
	return nil, echo.NewHTTPError(http.StatusBadRequest,
		"not a known webhook: no "+headerGitHubEvent+", "+headerGitLabEvent+" or "+headerBitbucketEvent+" header")
}

// detect names the provider of a request by its event header, and the event.
func detect(h http.Header) (provider, event string) {
	for _, c := range []struct{ provider, header string }{
		{providerGitHub, headerGitHubEvent},
		{providerGitLab, headerGitLabEvent},
		{providerBitbucket, headerBitbucketEvent},
	} {
		if ev := h.Get(c.header); ev != "" {
			return c.provider, ev
		}
	}
	return "", ""
}

func unauthorized(msg string) error { return echo.NewHTTPError(http.StatusUnauthorized, msg) }

func badRequest(msg string) error { return echo.NewHTTPError(http.StatusBadRequest, msg) }

func notConfigured(provider string) error {
	return unauthorized("webhook secret not configured for " + provider)
}

// verifyHMAC checks that header holds "sha256=<hex HMAC-SHA256 of body>"
// keyed with secret.
func verifyHMAC(provider, secret, header string, h http.Header, body []byte) error {
	if secret == "" {
		return notConfigured(provider)
	}
	sig := h.Get(header)
	if sig == "" {
		return unauthorized("missing " + header + " header")
	}
	digest, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return unauthorized(header + " is not a sha256 signature")
	}
	got, err := hex.DecodeString(digest)
	if err != nil {
		return unauthorized(header + " is not hex")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return unauthorized(header + " does not match the payload")
	}
	return nil
}

// verifyToken checks a shared token in constant time; hashing both sides
// first hides the secret's length too.
func verifyToken(provider, secret, token string) error {
	if secret == "" {
		return notConfigured(provider)
	}
	if token == "" {
		return unauthorized("missing " + headerGitLabToken + " header")
	}
	want, got := sha256.Sum256([]byte(secret)), sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return unauthorized(headerGitLabToken + " does not match")
	}
	return nil
}

func notPush(provider, event string) error {
	return fmt.Errorf("%s event %q: %w; only pushes refresh applications", provider, event, ErrNotPush)
}

// decode unmarshals a push payload; a malformed one is a 400.
func decode(provider string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "malformed "+provider+" push payload").Wrap(err)
	}
	return nil
}

// newPush builds a Push, dropping empty and repeated URLs and an all-zero
// SHA (a deleted ref), and rejects a payload without a ref or a URL.
func newPush(provider, ref, after, defaultBranch string, urls ...string) (Push, error) {
	p := Push{Provider: provider, Ref: ref, DefaultBranch: defaultBranch}
	if strings.Trim(after, "0") != "" {
		p.After = after
	}
	for _, u := range urls {
		if u != "" && !slices.Contains(p.RepoURLs, u) {
			p.RepoURLs = append(p.RepoURLs, u)
		}
	}
	if ref == "" {
		return Push{}, badRequest(provider + " push payload has no ref")
	}
	if len(p.RepoURLs) == 0 {
		return Push{}, badRequest(provider + " push payload has no repository URL")
	}
	return p, nil
}

type githubPush struct {
	Ref        string       `json:"ref"`
	After      string       `json:"after"`
	Commits    []pushCommit `json:"commits"`
	Repository struct {
		HTMLURL       string `json:"html_url"`
		CloneURL      string `json:"clone_url"`
		SSHURL        string `json:"ssh_url"`
		GitURL        string `json:"git_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
}

func parseGitHub(event, contentType string, body []byte) ([]Push, error) {
	switch event {
	case "ping":
		return nil, nil
	case "push":
	default:
		return nil, notPush(providerGitHub, event)
	}
	// A hook with content type application/x-www-form-urlencoded sends the
	// JSON in the "payload" field.
	if mt, _, _ := mime.ParseMediaType(contentType); mt == echo.MIMEApplicationForm {
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			return nil, badRequest("form-encoded github push has no payload field")
		}
		body = []byte(form.Get("payload"))
	}
	var p githubPush
	if err := decode(providerGitHub, body, &p); err != nil {
		return nil, err
	}
	r := p.Repository
	push, err := newPush(providerGitHub, p.Ref, p.After, r.DefaultBranch, r.HTMLURL, r.CloneURL, r.SSHURL, r.GitURL)
	if err != nil {
		return nil, err
	}
	push.Files = changedFiles(p.Commits)
	return []Push{push}, nil
}

type gitlabRepo struct {
	WebURL        string `json:"web_url"`
	Homepage      string `json:"homepage"`
	GitHTTPURL    string `json:"git_http_url"`
	GitSSHURL     string `json:"git_ssh_url"`
	DefaultBranch string `json:"default_branch"`
}

type gitlabPush struct {
	ObjectKind string       `json:"object_kind"`
	EventName  string       `json:"event_name"`
	Ref        string       `json:"ref"`
	After      string       `json:"after"`
	Commits    []pushCommit `json:"commits"`
	Project    gitlabRepo   `json:"project"`
	// Repository is the deprecated twin of Project; older servers fill it.
	Repository gitlabRepo `json:"repository"`
}

func parseGitLab(event string, body []byte) ([]Push, error) {
	switch event {
	case "Push Hook", "Tag Push Hook", "System Hook":
	default:
		return nil, notPush(providerGitLab, event)
	}
	var p gitlabPush
	if err := decode(providerGitLab, body, &p); err != nil {
		return nil, err
	}
	// System hooks carry every kind of event; the payload says which.
	if event == "System Hook" && p.ObjectKind != "push" && p.ObjectKind != "tag_push" {
		return nil, notPush(providerGitLab, event+": "+cmp.Or(p.ObjectKind, p.EventName))
	}
	pr, rp := p.Project, p.Repository
	push, err := newPush(providerGitLab, p.Ref, p.After, pr.DefaultBranch,
		pr.WebURL, pr.GitHTTPURL, pr.GitSSHURL, rp.Homepage, rp.GitHTTPURL, rp.GitSSHURL)
	if err != nil {
		return nil, err
	}
	push.Files = changedFiles(p.Commits)
	return []Push{push}, nil
}

// bitbucketRef is one side of a Bitbucket Cloud ref change.
type bitbucketRef struct {
	Type   string `json:"type"` // "branch" or "tag"
	Name   string `json:"name"`
	Target struct {
		Hash string `json:"hash"`
	} `json:"target"`
}

type bitbucketCloudPush struct {
	Repository struct {
		Links struct {
			HTML struct {
				Href string `json:"href"`
			} `json:"html"`
		} `json:"links"`
	} `json:"repository"`
	Push struct {
		Changes []struct {
			// Old is null for a created ref, New for a deleted one.
			Old *bitbucketRef `json:"old"`
			New *bitbucketRef `json:"new"`
		} `json:"changes"`
	} `json:"push"`
}

type bitbucketServerPush struct {
	Repository struct {
		Links struct {
			Clone []struct {
				Href string `json:"href"`
				Name string `json:"name"`
			} `json:"clone"`
		} `json:"links"`
	} `json:"repository"`
	Changes []struct {
		RefID  string `json:"refId"`
		ToHash string `json:"toHash"`
		Type   string `json:"type"` // ADD, UPDATE or DELETE
	} `json:"changes"`
}

func parseBitbucket(event string, body []byte) ([]Push, error) {
	switch event {
	case "diagnostics:ping": // Bitbucket Server's "Test connection"
		return nil, nil
	case "repo:push":
		return parseBitbucketCloud(body)
	case "repo:refs_changed":
		return parseBitbucketServer(body)
	}
	return nil, notPush(providerBitbucket, event)
}

func parseBitbucketCloud(body []byte) ([]Push, error) {
	var p bitbucketCloudPush
	if err := decode(providerBitbucket, body, &p); err != nil {
		return nil, err
	}
	repoURL := p.Repository.Links.HTML.Href
	if repoURL == "" {
		return nil, badRequest(providerBitbucket + " push payload has no repository URL")
	}
	var pushes []Push
	for _, c := range p.Push.Changes {
		ref, after := c.New, ""
		if ref != nil {
			after = ref.Target.Hash
		} else if ref = c.Old; ref == nil {
			continue
		}
		var full string
		switch ref.Type {
		case "branch":
			full = branchPrefix + ref.Name
		case "tag":
			full = tagPrefix + ref.Name
		default:
			continue
		}
		push, err := newPush(providerBitbucket, full, after, "", repoURL)
		if err != nil {
			return nil, err
		}
		pushes = append(pushes, push)
	}
	return pushes, nil
}

func parseBitbucketServer(body []byte) ([]Push, error) {
	var p bitbucketServerPush
	if err := decode(providerBitbucketServer, body, &p); err != nil {
		return nil, err
	}
	var urls []string
	for _, l := range p.Repository.Links.Clone {
		urls = append(urls, l.Href)
	}
	var pushes []Push
	for _, c := range p.Changes {
		after := c.ToHash
		if c.Type == "DELETE" {
			after = ""
		}
		push, err := newPush(providerBitbucketServer, c.RefID, after, "", urls...)
		if err != nil {
			return nil, err
		}
		pushes = append(pushes, push)
	}
	return pushes, nil
}
