package source

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// MaxSubjectRunes bounds the commit subject that RevisionMetadata returns.
const MaxSubjectRunes = 200

// maxKnownCommits bounds the commits whose metadata is kept in memory.
const maxKnownCommits = 4096

// RevisionMetadata returns the subject (the first line of the message, at
// most MaxSubjectRunes), author and date of commit sha of repoURL when this
// worker has read it: a checkout remembers the commit it wrote, and
// otherwise the mirror is read. It never fetches and never waits for a
// fetch in progress; false means unknown here.
func (a *Activities) RevisionMetadata(repoURL, sha string) (appspec.RevisionMetadata, bool) {
	if !fullSHA.MatchString(sha) {
		return appspec.RevisionMetadata{}, false
	}
	key := urlKey(repoURL)
	if m, ok := a.commits.get(key + sha); ok {
		return m, true
	}
	lock := a.locks.get(key)
	if !lock.fetch.TryLock() {
		return appspec.RevisionMetadata{}, false
	}
	defer lock.fetch.Unlock()
	repo, err := git.PlainOpen(filepath.Join(a.cacheDir, "mirrors", key))
	if err != nil {
		if !errors.Is(err, git.ErrRepositoryNotExists) {
			a.log.Debug(msgNoMetadata, "repo", redactURL(repoURL), "sha", sha, "error", err)
		}
		return appspec.RevisionMetadata{}, false
	}
	c, err := repo.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return appspec.RevisionMetadata{}, false
	}
	return a.commits.put(key+sha, c), true
}

const msgNoMetadata = "cannot read the commit's metadata from the mirror"

// knownCommits keeps the metadata of commits read, by mirror key and SHA.
// It is cleared when full: the metadata of a commit never changes, and a
// lost entry is read from the mirror again.
type knownCommits struct {
	mu sync.Mutex
	m  map[string]appspec.RevisionMetadata
}

func (k *knownCommits) get(key string) (appspec.RevisionMetadata, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m, ok := k.m[key]
	return m, ok
}

// put remembers the metadata of c under key and returns it.
func (k *knownCommits) put(key string, c *object.Commit) appspec.RevisionMetadata {
	m := appspec.RevisionMetadata{Message: subject(c.Message), Author: c.Author.Name, Date: c.Author.When.UTC()}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxKnownCommits {
		k.m = map[string]appspec.RevisionMetadata{}
	}
	k.m[key] = m
	return m
}

// subject is the first non-empty line of a commit message, cut to
// MaxSubjectRunes (with an ellipsis) and valid UTF-8.
func subject(msg string) string {
	msg = strings.TrimLeft(msg, " \t\r\n")
	line, _, _ := strings.Cut(msg, "\n")
	line = strings.ToValidUTF8(strings.TrimSpace(line), "\uFFFD")
	if utf8.RuneCountInString(line) <= MaxSubjectRunes {
		return line
	}
	return string([]rune(line)[:MaxSubjectRunes-1]) + "…"
}
