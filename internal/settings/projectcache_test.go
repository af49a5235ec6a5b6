package settings

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// countingStore counts the reads of its store.
type countingStore struct {
	secretstore.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, name string) (map[string][]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, name)
}

// TestWatchProjects: with the watch, Project answers from memory (no read
// of the Secret) and follows edits and deletions as the watch delivers
// them; the informer keeps no data of the store's other Secrets.
func TestWatchProjects(t *testing.T) {
	env, cleanup, err := testbed.Shared(t.Context(), "settings")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	ctx := t.Context()
	// The store creates its namespace with its first Secret.
	k, err := secretstore.NewKubernetes(kubernetes.NewForConfigOrDie(env.Cluster.Config), fmt.Sprintf("projects-%d", time.Now().UnixNano()%1e9))
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingStore{Store: k}
	s, err := New(counted)
	if err != nil {
		t.Fatal(err)
	}
	teamA := appspec.Project{Name: "team-a", SourceRepos: []string{"https://git.example.com/a/*"}}
	if err := s.PutProject(ctx, teamA); err != nil {
		t.Fatal(err)
	}
	if err := k.Put(ctx, "windlass-repo-x", map[string][]byte{"password": []byte("hunter2")}); err != nil {
		t.Fatal(err)
	}
	s.WatchProjects(ctx, k.Secrets(), slog.New(slog.DiscardHandler))
	c := s.cache.Load()
	eventually(t, "team-a cached", func() bool { _, ok := c.get("team-a"); return ok })

	before := counted.gets.Load()
	p, err := s.Project(ctx, "team-a")
	if err != nil || p.SourceRepos[0] != teamA.SourceRepos[0] {
		t.Fatalf("project = %+v, %v", p, err)
	}
	// The built-in default project has no Secret: once listed, the
	// cache knows that too.
	if p, err := s.Project(ctx, appspec.DefaultProject); err != nil || p.Name != appspec.DefaultProject {
		t.Fatalf("default project = %+v, %v", p, err)
	}
	if n := counted.gets.Load() - before; n != 0 {
		t.Fatalf("cached projects read their Secrets %d times", n)
	}

	teamA.SourceRepos = []string{"https://git.example.com/b/*"}
	if err := s.PutProject(ctx, teamA); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edit seen", func() bool { p, ok := c.get("team-a"); return ok && p.SourceRepos[0] == teamA.SourceRepos[0] })
	if err := s.DeleteProject(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion seen", func() bool { _, ok := c.get("team-a"); return !ok })
	if _, err := s.Project(ctx, "team-a"); !errors.Is(err, ErrProjectNotFound) {
		t.Fatalf("deleted project: %v", err)
	}

	// A project Secret that does not decode is an error, the default
	// project's too (not the built-in default, which allows everything).
	for _, name := range []string{"broken", appspec.DefaultProject} {
		if err := k.Put(ctx, prefixProject+name, map[string][]byte{"spec": []byte("{not json")}); err != nil {
			t.Fatal(err)
		}
		eventually(t, name+" seen as undecodable", func() bool {
			_, err := s.Project(ctx, name)
			return err != nil && strings.Contains(err.Error(), "decode project "+name)
		})
	}

	for _, obj := range c.objects() {
		if sec := obj.(*corev1.Secret); !strings.HasPrefix(sec.Name, prefixProject) && len(sec.Data) > 0 {
			t.Errorf("the informer holds the data of Secret %s", sec.Name)
		}
	}
}

// A project the cache does not hold (created a moment ago, before the
// watch delivered it) is read from the store.
func TestProjectNotCachedIsRead(t *testing.T) {
	s := newStore(t)
	s.cache.Store(&projectCache{projects: map[string]appspec.Project{}, synced: func() bool { return true }})
	if err := s.PutProject(t.Context(), appspec.Project{Name: "new", SourceRepos: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Project(t.Context(), "new"); err != nil || p.Name != "new" {
		t.Fatalf("project = %+v, %v", p, err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30 s: %s", what)
		}
	}
}
