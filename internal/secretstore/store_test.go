package secretstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// The same behaviour from both stores; the Kubernetes one runs against the
// test bed's API server, in a namespace it creates itself.
func TestStores(t *testing.T) {
	stores := map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return &Memory{} },
		"kubernetes": func(t *testing.T) Store {
			env, cleanup, err := testbed.Shared(t.Context(), "secretstore")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cleanup)
			cs, err := kubernetes.NewForConfig(env.Cluster.Config)
			if err != nil {
				t.Fatal(err)
			}
			k, err := NewKubernetes(cs, fmt.Sprintf("wl-secrets-%d", time.Now().UnixNano()%1e9))
			if err != nil {
				t.Fatal(err)
			}
			return k
		},
	}
	for _, name := range []string{"memory", "kubernetes"} {
		t.Run(name, func(t *testing.T) {
			s := stores[name](t)
			ctx := t.Context()
			if _, err := s.Get(ctx, "repo-a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get missing: %v", err)
			}
			if err := s.Delete(ctx, "repo-a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("delete missing: %v", err)
			}
			want := map[string][]byte{"password": []byte("s3cret"), "url": []byte("https://git.example/a")}
			for _, n := range []string{"repo-a", "repo-b", "cluster-x"} {
				if err := s.Put(ctx, n, want); err != nil {
					t.Fatal(err)
				}
			}
			want["password"] = []byte("rotated")
			if err := s.Put(ctx, "repo-a", want); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "repo-a")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("get (-want +got):\n%s", diff)
			}
			names, err := s.List(ctx, "repo-")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"repo-a", "repo-b"}, names); diff != "" {
				t.Fatalf("list (-want +got):\n%s", diff)
			}
			if err := s.Delete(ctx, "repo-a"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "repo-a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get deleted: %v", err)
			}
		})
	}
}
