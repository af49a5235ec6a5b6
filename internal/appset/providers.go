package appset

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Default API addresses of the providers.
const (
	defaultGitHubAPI = "https://api.github.com"
	defaultGitLabAPI = "https://gitlab.com"
	defaultGiteaAPI  = "https://gitea.com"
)

var defaultAPIs = map[string]string{"github": defaultGitHubAPI, "gitlab": defaultGitLabAPI, "gitea": defaultGiteaAPI}

// provider is one provider's API, with its token resolved.
type provider struct {
	ev     *evaluation
	kind   string // github, gitlab or gitea
	base   string
	token  string
	client *http.Client
	field  string
}

func (ev *evaluation) provider(ctx context.Context, kind, api string, ref *SecretRef, insecure bool, field string) (*provider, error) {
	p := &provider{ev: ev, kind: kind, base: strings.TrimSuffix(api, "/"), client: ev.g.http, field: field}
	if p.base == "" {
		p.base = defaultAPIs[kind]
	}
	if ref != nil {
		if p.base != defaultAPIs[kind] && !slices.Contains(ev.g.apis, p.base) {
			return nil, fmt.Errorf("%w: %s.api: %s is not an allowed provider API, so its tokenRef is not sent there (allow it with --appset-allowed-scm-urls)",
				ErrInvalid, field, p.base)
		}
		if ev.g.secrets == nil {
			return nil, fmt.Errorf("%w: %s.tokenRef: no secret store is configured", ErrUnavailable, field)
		}
		if ref.SecretName == "" || ref.Key == "" {
			return nil, invalid(field+".tokenRef", "secretName and key are required")
		}
		data, err := ev.g.secrets.Get(ctx, TokenSecretPrefix+ref.SecretName)
		if err != nil {
			return nil, fmt.Errorf("%s.tokenRef: read secret %s%s: %w", field, TokenSecretPrefix, ref.SecretName, err)
		}
		tok, ok := data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("%w: %s.tokenRef: secret %s%s has no key %s", ErrInvalid, field, TokenSecretPrefix, ref.SecretName, ref.Key)
		}
		p.token = strings.TrimSpace(string(tok))
	}
	if insecure {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the set asks for it (insecure: true)
		p.client = &http.Client{Transport: tr, Timeout: ev.g.http.Timeout}
	}
	return p, nil
}

// get reads one JSON answer.
func (p *provider) get(ctx context.Context, path string, query url.Values, out any) error {
	u := p.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, p.field, err)
	}
	req.Header.Set("Accept", "application/json")
	if p.token != "" {
		switch p.kind {
		case "github":
			req.Header.Set("Authorization", "Bearer "+p.token)
		case "gitlab":
			req.Header.Set("PRIVATE-TOKEN", p.token)
		case "gitea":
			req.Header.Set("Authorization", "token "+p.token)
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %s API: %w", ErrSource, p.field, p.kind, redactErr(err, p.token))
	}
	defer resp.Body.Close()
	if err := readJSON(resp, out); err != nil {
		return fmt.Errorf("%w: %s: %s API: %w", ErrSource, p.field, p.kind, err)
	}
	return nil
}

func redactErr(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "***"))
}

// pageSize is how many items a page asks for.
const pageSize = 100

// pages reads a list page by page until a short page, at most enough
// pages for the limit.
func pages[T any](ctx context.Context, p *provider, path string, query url.Values) ([]T, error) {
	if query == nil {
		query = url.Values{}
	}
	sizeKey := "per_page"
	if p.kind == "gitea" {
		sizeKey = "limit"
	}
	query.Set(sizeKey, strconv.Itoa(pageSize))
	var all []T
	for page := 1; ; page++ {
		query.Set("page", strconv.Itoa(page))
		var items []T
		if err := p.get(ctx, path, query, &items); err != nil {
			return nil, err
		}
		all = append(all, items...)
		if len(all) > p.ev.g.limit {
			return nil, fmt.Errorf("%w: %s yields more than the limit of %d elements", ErrTooManyElements, p.field, p.ev.g.limit)
		}
		if len(items) < pageSize {
			return all, nil
		}
	}
}

// pullRequest is a pull (GitHub, Gitea) or merge (GitLab) request.
type pullRequest struct {
	Number       int
	Title        string
	Branch       string
	TargetBranch string
	HeadSHA      string
	Labels       []string
	Author       string
}

type ghPull struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Head   struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
}

type glMerge struct {
	IID          int      `json:"iid"`
	Title        string   `json:"title"`
	SourceBranch string   `json:"source_branch"`
	TargetBranch string   `json:"target_branch"`
	SHA          string   `json:"sha"`
	Labels       []string `json:"labels"`
	Author       struct {
		Username string `json:"username"`
	} `json:"author"`
}

func (ev *evaluation) pullRequests(ctx context.Context, g *PullRequestGenerator, field string) ([]Params, error) {
	var (
		kind string
		r    *RepoProvider
	)
	switch {
	case g.GitHub != nil:
		kind, r = "github", g.GitHub
	case g.GitLab != nil:
		kind, r = "gitlab", g.GitLab
	default:
		kind, r = "gitea", g.Gitea
	}
	f := field + "." + kind
	p, err := ev.provider(ctx, kind, r.API, r.TokenRef, r.Insecure, f)
	if err != nil {
		return nil, err
	}
	var prs []pullRequest
	switch kind {
	case "gitlab":
		if r.Project == "" {
			return nil, invalid(f+".project", "is required")
		}
		q := url.Values{}
		state := r.PullRequestState
		if state == "" {
			state = "opened"
		}
		q.Set("state", state)
		if len(r.Labels) > 0 {
			q.Set("labels", strings.Join(r.Labels, ","))
		}
		list, err := pages[glMerge](ctx, p, "/api/v4/projects/"+url.PathEscape(r.Project)+"/merge_requests", q)
		if err != nil {
			return nil, err
		}
		for _, m := range list {
			prs = append(prs, pullRequest{Number: m.IID, Title: m.Title, Branch: m.SourceBranch, TargetBranch: m.TargetBranch,
				HeadSHA: m.SHA, Labels: m.Labels, Author: m.Author.Username})
		}
	default:
		if r.Owner == "" || r.Repo == "" {
			return nil, invalid(f, "owner and repo are required")
		}
		path := "/repos/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Repo) + "/pulls"
		if kind == "gitea" {
			path = "/api/v1" + path
		}
		list, err := pages[ghPull](ctx, p, path, url.Values{"state": {"open"}})
		if err != nil {
			return nil, err
		}
		for _, pr := range list {
			labels := make([]string, len(pr.Labels))
			for i, l := range pr.Labels {
				labels[i] = l.Name
			}
			if !hasAll(labels, r.Labels) {
				continue
			}
			prs = append(prs, pullRequest{Number: pr.Number, Title: pr.Title, Branch: pr.Head.Ref, TargetBranch: pr.Base.Ref,
				HeadSHA: pr.Head.SHA, Labels: labels, Author: pr.User.Login})
		}
	}
	var out []Params
	for _, pr := range prs {
		ok, err := pr.kept(g.Filters, field)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		branchSlug, _ := slugify(pr.Branch)
		targetSlug, _ := slugify(pr.TargetBranch)
		out = append(out, Params{
			"number": strconv.Itoa(pr.Number), "title": pr.Title, "author": pr.Author,
			"branch": pr.Branch, "branch_slug": branchSlug, "target_branch": pr.TargetBranch, "target_branch_slug": targetSlug,
			"head_sha": pr.HeadSHA, "head_short_sha": short(pr.HeadSHA, 8), "head_short_sha_7": short(pr.HeadSHA, 7),
			"labels": toAny(pr.Labels),
		})
	}
	return out, nil
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func short(sha string, n int) string {
	if len(sha) > n {
		return sha[:n]
	}
	return sha
}

// kept says whether the pull request passes any of the filters (all of
// one filter's conditions must hold); no filters keep everything.
func (pr pullRequest) kept(filters []PullRequestFilter, field string) (bool, error) {
	if len(filters) == 0 {
		return true, nil
	}
	for i, f := range filters {
		all := true
		for _, c := range []struct {
			name string
			re   *string
			v    string
		}{{"branchMatch", f.BranchMatch, pr.Branch}, {"targetBranchMatch", f.TargetBranchMatch, pr.TargetBranch}, {"titleMatch", f.TitleMatch, pr.Title}} {
			ok, err := match(c.re, c.v, fmt.Sprintf("%s.filters[%d].%s", field, i, c.name))
			if err != nil {
				return false, err
			}
			all = all && ok
		}
		if all {
			return true, nil
		}
	}
	return false, nil
}

func match(re *string, v, field string) (bool, error) {
	if re == nil {
		return true, nil
	}
	r, err := regexp.Compile(*re)
	if err != nil {
		return false, invalid(field, "%v", err)
	}
	return r.MatchString(v), nil
}

// repository is one repository and branch an SCM provider lists.
type repository struct {
	Org, Name, URL, Branch, SHA, ID string
	Labels                          []string
}

type ghRepo struct {
	ID            int64    `json:"id"`
	Name          string   `json:"name"`
	CloneURL      string   `json:"clone_url"`
	SSHURL        string   `json:"ssh_url"`
	DefaultBranch string   `json:"default_branch"`
	Topics        []string `json:"topics"`
	Owner         struct {
		Login string `json:"login"`
	} `json:"owner"`
}

type glProject struct {
	ID            int64    `json:"id"`
	Path          string   `json:"path"`
	HTTPURL       string   `json:"http_url_to_repo"`
	SSHURL        string   `json:"ssh_url_to_repo"`
	DefaultBranch string   `json:"default_branch"`
	Topics        []string `json:"topics"`
	Namespace     struct {
		FullPath string `json:"full_path"`
	} `json:"namespace"`
}

func (r ghRepo) repository(ssh bool) repository {
	u := r.CloneURL
	if ssh {
		u = r.SSHURL
	}
	return repository{Org: r.Owner.Login, Name: r.Name, URL: u, Branch: r.DefaultBranch, ID: strconv.FormatInt(r.ID, 10), Labels: r.Topics}
}

func (r glProject) repository(ssh bool) repository {
	u := r.HTTPURL
	if ssh {
		u = r.SSHURL
	}
	return repository{Org: r.Namespace.FullPath, Name: r.Path, URL: u, Branch: r.DefaultBranch, ID: strconv.FormatInt(r.ID, 10), Labels: r.Topics}
}

// listRepos reads a provider's list of repositories.
func listRepos[T interface{ repository(ssh bool) repository }](ctx context.Context, p *provider, path string, q url.Values, ssh bool) ([]repository, error) {
	list, err := pages[T](ctx, p, path, q)
	if err != nil {
		return nil, err
	}
	out := make([]repository, len(list))
	for i, r := range list {
		out[i] = r.repository(ssh)
	}
	return out, nil
}

type branch struct {
	Name   string `json:"name"`
	Commit struct {
		SHA string `json:"sha"`
		ID  string `json:"id"`
	} `json:"commit"`
}

func (b branch) sha() string {
	if b.Commit.SHA != "" {
		return b.Commit.SHA
	}
	return b.Commit.ID
}

func (ev *evaluation) scmProvider(ctx context.Context, g *SCMProviderGenerator, field string) ([]Params, error) {
	var (
		kind, org, repoPath string
		branchPath          func(r repository) string
		o                   *OrgProvider
	)
	switch {
	case g.GitHub != nil:
		kind, o = "github", g.GitHub
		org = o.Organization
		repoPath = "/orgs/" + url.PathEscape(org) + "/repos"
		branchPath = func(r repository) string {
			return "/repos/" + url.PathEscape(r.Org) + "/" + url.PathEscape(r.Name) + "/branches"
		}
	case g.GitLab != nil:
		kind, o = "gitlab", g.GitLab
		org = o.Group
		repoPath = "/api/v4/groups/" + url.PathEscape(org) + "/projects"
		branchPath = func(r repository) string { return "/api/v4/projects/" + r.ID + "/repository/branches" }
	default:
		kind, o = "gitea", g.Gitea
		org = o.Owner
		repoPath = "/api/v1/orgs/" + url.PathEscape(org) + "/repos"
		branchPath = func(r repository) string {
			return "/api/v1/repos/" + url.PathEscape(r.Org) + "/" + url.PathEscape(r.Name) + "/branches"
		}
	}
	f := field + "." + kind
	if org == "" {
		return nil, invalid(f, "the organization, group or owner is required")
	}
	p, err := ev.provider(ctx, kind, o.API, o.TokenRef, o.Insecure, f)
	if err != nil {
		return nil, err
	}
	ssh := g.CloneProtocol == "ssh"
	var repos []repository
	if kind == "gitlab" {
		q := url.Values{}
		if o.IncludeSubgroups {
			q.Set("include_subgroups", "true")
		}
		repos, err = listRepos[glProject](ctx, p, repoPath, q, ssh)
	} else {
		repos, err = listRepos[ghRepo](ctx, p, repoPath, nil, ssh)
	}
	if err != nil {
		return nil, err
	}
	var out []Params
	for _, r := range repos {
		if ok, err := repoKept(r, g.Filters, field); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		bpath := branchPath(r)
		var branches []branch
		if o.AllBranches {
			if branches, err = pages[branch](ctx, p, bpath, nil); err != nil {
				return nil, err
			}
		} else {
			var b branch
			if err := p.get(ctx, bpath+"/"+url.PathEscape(r.Branch), nil, &b); err != nil {
				return nil, err
			}
			branches = []branch{b}
		}
		for _, b := range branches {
			rb := r
			rb.Branch, rb.SHA = b.Name, b.sha()
			if ok, err := branchKept(rb, g.Filters, field); err != nil || !ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			q := Params{
				"organization": rb.Org, "repository": rb.Name, "url": rb.URL, "branch": rb.Branch,
				"branchNormalized": normalize(rb.Branch), "sha": rb.SHA, "short_sha": short(rb.SHA, 8),
				"short_sha_7": short(rb.SHA, 7), "labels": strings.Join(rb.Labels, ","), "repository_id": rb.ID,
			}
			if q, err = q.withValues(g.Values, ev.r); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			out = append(out, q)
			if len(out) > ev.g.limit {
				return nil, fmt.Errorf("%w: %s yields more than the limit of %d elements", ErrTooManyElements, field, ev.g.limit)
			}
		}
	}
	return out, nil
}

// repoKept applies the repository conditions of the filters: any filter
// whose repositoryMatch and labelMatch both hold keeps the repository.
func repoKept(r repository, filters []SCMFilter, field string) (bool, error) {
	if len(filters) == 0 {
		return true, nil
	}
	for i, f := range filters {
		ok, err := match(f.RepositoryMatch, r.Name, fmt.Sprintf("%s.filters[%d].repositoryMatch", field, i))
		if err != nil {
			return false, err
		}
		if ok && f.LabelMatch != nil {
			ok = false
			for _, l := range r.Labels {
				m, err := match(f.LabelMatch, l, fmt.Sprintf("%s.filters[%d].labelMatch", field, i))
				if err != nil {
					return false, err
				}
				ok = ok || m
			}
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// branchKept applies the filters to a repository's branch: a filter that
// keeps the repository must also match the branch.
func branchKept(r repository, filters []SCMFilter, field string) (bool, error) {
	if len(filters) == 0 {
		return true, nil
	}
	for i, f := range filters {
		ok, err := repoKept(r, []SCMFilter{f}, field)
		if err != nil || !ok {
			if err != nil {
				return false, err
			}
			continue
		}
		if ok, err = match(f.BranchMatch, r.Branch, fmt.Sprintf("%s.filters[%d].branchMatch", field, i)); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}
