package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// errShallowRefused is a server that would not send the commit alone: it
// takes wants only of the commits its references point to.
var errShallowRefused = errors.New("the server does not serve this commit alone")

const msgShallowFallback = "shallow fetch of the commit failed; fetching the repository"

// shallowCommit fetches commit sha alone (depth 1) into a scratch
// repository that lives for the call, and returns it: a checkout of a
// repository the mirror has not fetched yet then costs one snapshot, not
// the whole history. It asks by the name of a reference at the commit
// when the server advertises one, else by SHA, which servers allow only
// when configured to (GitHub and GitLab do); the caller then fetches the
// mirror.
func (a *Activities) shallowCommit(ctx context.Context, repoURL, sha string) (*object.Commit, func(), error) {
	if err := CheckTransport(repoURL); err != nil {
		return nil, nil, err
	}
	auth, err := a.creds.Auth(ctx, repoURL)
	if err != nil {
		return nil, nil, err
	}
	o, err := a.transportOptions(ctx, repoURL)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(filepath.Join(a.cacheDir, "mirrors"), tmpPrefix+"shallow-")
	if err != nil {
		return nil, nil, err
	}
	done := func() { _ = os.RemoveAll(dir) }
	repo, err := git.PlainInit(dir, true)
	if err == nil {
		_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{repoURL}})
	}
	if err == nil {
		err = repo.FetchContext(netContext(ctx, a.netTimeout), &git.FetchOptions{
			RemoteName:   "origin",
			RefSpecs:     []config.RefSpec{a.commitRefSpec(ctx, repoURL, sha, "refs/heads/windlass-checkout")},
			Depth:        1,
			Auth:         auth,
			Tags:         git.NoTags,
			Progress:     io.Discard,
			ProxyOptions: netOptions(repoURL, a.netTimeout, o.Proxy),
			CABundle:     o.CABundle, ClientCert: o.ClientCert, ClientKey: o.ClientKey, InsecureSkipTLS: o.InsecureSkipTLS,
		})
	}
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("%w: %w", errShallowRefused, classify(repoURL, err))
	}
	c, err := repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("%w: %w", errShallowRefused, err)
	}
	return c, done, nil
}

// mirrorIsEmpty reports a mirror that has fetched nothing yet.
func mirrorIsEmpty(repo *git.Repository) bool {
	refs, err := repo.References()
	if err != nil {
		return false
	}
	defer refs.Close()
	empty := true
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name().IsBranch() || r.Name().IsTag() {
			empty = false
			return storer.ErrStop
		}
		return nil
	})
	return empty
}

// fetchCommit brings commit sha for a checkout and returns it with a
// release for what it used. While the mirror is empty it asks for the
// commit alone and shallow (WithShallowFetch); otherwise, or when the
// server refuses, it fetches the mirror's branches and tags, and then
// the commit itself for one that no branch or tag holds, such as the
// head of refs/pull/N/head.
func (a *Activities) fetchCommit(ctx context.Context, repo *git.Repository, repoURL, sha string) (*object.Commit, func(), error) {
	none := func() {}
	if a.shallow && mirrorIsEmpty(repo) {
		c, done, err := a.shallowCommit(ctx, repoURL, sha)
		switch {
		case err == nil:
			return c, done, nil
		case ctx.Err() != nil, errors.Is(err, ErrAuthFailed), errors.Is(err, ErrRepoNotFound), errors.Is(err, ErrHostKeyMismatch),
			errors.Is(err, ErrTransportNotAllowed):
			return nil, nil, err
		}
		a.log.Debug(msgShallowFallback, "repo", redactURL(repoURL), "sha", sha, "error", err)
	}
	if err := a.fetch(ctx, repo, repoURL); err != nil {
		return nil, nil, err
	}
	h := plumbing.NewHash(sha)
	if c, err := repo.CommitObject(h); err == nil {
		return c, none, nil
	}
	auth, err := a.creds.Auth(ctx, repoURL)
	if err != nil {
		return nil, nil, err
	}
	o, err := a.transportOptions(ctx, repoURL)
	if err != nil {
		return nil, nil, err
	}
	err = repo.FetchContext(netContext(ctx, a.netTimeout), &git.FetchOptions{
		RemoteName:   "origin",
		RefSpecs:     []config.RefSpec{a.commitRefSpec(ctx, repoURL, sha, "refs/windlass/commits/"+sha)},
		Auth:         auth,
		Tags:         git.NoTags,
		Progress:     io.Discard,
		ProxyOptions: netOptions(repoURL, a.netTimeout, o.Proxy),
		CABundle:     o.CABundle, ClientCert: o.ClientCert, ClientKey: o.ClientKey, InsecureSkipTLS: o.InsecureSkipTLS,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		a.log.Debug(msgCommitFetchFailed, "repo", redactURL(repoURL), "sha", sha, "error", err)
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: commit %s in %s: no reference of the server holds it", ErrRevisionNotFound, sha, redactURL(repoURL))
	}
	return c, none, nil
}

const msgCommitFetchFailed = "fetching the commit by SHA failed"

// commitRefSpec is the refspec that fetches commit sha into dst: from a
// reference the server advertises at it (refs/pull/N/head, a branch), or
// else from the SHA itself.
func (a *Activities) commitRefSpec(ctx context.Context, repoURL, sha, dst string) config.RefSpec {
	src := sha
	if refs, err := a.lsRemote(ctx, repoURL, false); err == nil {
		for _, r := range refs {
			n := r.Name()
			if r.Type() == plumbing.HashReference && r.Hash().String() == sha && strings.HasPrefix(n.String(), "refs/") &&
				!strings.HasSuffix(n.String(), peeledSuffix) {
				src = n.String()
				break
			}
		}
	}
	return config.RefSpec("+" + src + ":" + dst)
}
