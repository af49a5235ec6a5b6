package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// countingStore counts the writes to a store; with failSet they fail.
type countingStore struct {
	ListStore
	sets    atomic.Int32
	failSet bool
}

func (s *countingStore) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	s.sets.Add(1)
	if s.failSet {
		return errors.New("redis down")
	}
	return s.ListStore.Set(ctx, key, value, ttl)
}

// configMaps are n ConfigMaps named cm-0 … cm-(n-1).
func configMaps(n int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%d", i)},
			"data":     map[string]any{"k": "v"},
		}}
	}
	return objs
}

func statusNames(rs []appspec.ResourceStatus) []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	slices.Sort(names)
	return names
}

// A compare that leaves resources out stores the full list, content-
// addressed, and returns its key next to the bounded list; the same list
// again is not written again; a short list has no key; a store that fails
// costs the key only.
func TestCompareStoresFullList(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: bed.RedisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	store := &countingStore{ListStore: render.RedisStore{Client: rdb}}
	h := newHarness(t, WithResourceLists(store, time.Minute))
	lists := ResourceLists{Store: render.RedisStore{Client: rdb}}
	const n = MaxResults + 20
	objs := configMaps(n)
	want := statusNames(func() []appspec.ResourceStatus {
		rs := make([]appspec.ResourceStatus, n)
		for i, o := range objs {
			rs[i].Name = o.GetName()
		}
		return rs
	}())
	tg, ref := h.target("big"), h.put(objs...)

	out := h.compare(tg, ref, false)
	if len(out.Resources) != MaxResults || out.Omitted != n-MaxResults || !strings.HasPrefix(out.ResourcesRef, listKeyPrefix) {
		t.Fatalf("compare: %d resources, %d omitted, ref %q; want %d, %d and a ref", len(out.Resources), out.Omitted, out.ResourcesRef, MaxResults, n-MaxResults)
	}
	t.Cleanup(func() { _ = rdb.Del(context.Background(), out.ResourcesRef).Err() })
	full, err := lists.LoadResources(t.Context(), out.ResourcesRef)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, statusNames(full)); diff != "" {
		t.Fatalf("stored list (-want +got):\n%s", diff)
	}
	for _, r := range full {
		if r.Status != appspec.SyncOutOfSync || r.Kind != "ConfigMap" || r.Namespace != h.ns {
			t.Fatalf("stored entry %+v: want an OutOfSync ConfigMap of %s", r, h.ns)
		}
	}
	if ttl := rdb.TTL(t.Context(), out.ResourcesRef).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL %s, want the configured minute", ttl)
	}

	again := h.compare(tg, ref, false)
	if again.ResourcesRef != out.ResourcesRef || store.sets.Load() != 1 {
		t.Fatalf("same list again: ref %q after %q, %d writes; want the same ref and 1 write", again.ResourcesRef, out.ResourcesRef, store.sets.Load())
	}

	// Nothing was applied: the short list has no extraneous entries.
	if short := h.compare(tg, h.put(objs[:3]...), false); short.ResourcesRef != "" || short.Omitted != 0 || len(short.Resources) != 3 {
		t.Fatalf("short list: %d resources, %d omitted, ref %q; want 3, 0 and none", len(short.Resources), short.Omitted, short.ResourcesRef)
	}

	if err := rdb.Del(t.Context(), out.ResourcesRef).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := lists.LoadResources(t.Context(), out.ResourcesRef); !errors.Is(err, render.ErrCacheMiss) {
		t.Fatalf("load of a deleted list: %v, want a cache miss", err)
	}
	if _, err := lists.LoadResources(t.Context(), "windlass:manifests:v2:0"); err == nil {
		t.Fatal("load of another cache's key: no error")
	}

	failing := newHarness(t, WithResourceLists(&countingStore{ListStore: store.ListStore, failSet: true}, time.Minute))
	down := failing.compare(failing.target("big"), failing.put(configMaps(n)...), false)
	if len(down.Resources) != MaxResults || down.Omitted != n-MaxResults || down.ResourcesRef != "" {
		t.Fatalf("store down: %d resources, %d omitted, ref %q; want %d, %d and no ref", len(down.Resources), down.Omitted, down.ResourcesRef, MaxResults, n-MaxResults)
	}
}

// The kinds left out are those only omitted resources have, once each,
// in order of first appearance.
func TestKindsLeftOut(t *testing.T) {
	res := func(group, kind, name string) appspec.ResourceStatus {
		return appspec.ResourceStatus{ResourceKey: appspec.ResourceKey{Group: group, Kind: kind, Name: name}}
	}
	cm, svc := res("", "ConfigMap", "a"), res("", "Service", "b")
	deploy, role := res("apps", "Deployment", "c"), res("rbac.authorization.k8s.io", "Role", "d")
	for _, tc := range []struct {
		name       string
		full, kept []appspec.ResourceStatus
		want       []appspec.GroupKind
	}{
		{name: "nothing left out", full: []appspec.ResourceStatus{cm, svc}, kept: []appspec.ResourceStatus{cm, svc}},
		{name: "a kind the kept list has", full: []appspec.ResourceStatus{cm, res("", "ConfigMap", "e")}, kept: []appspec.ResourceStatus{cm}},
		{name: "kinds only omitted resources have", full: []appspec.ResourceStatus{cm, role, deploy, res("apps", "Deployment", "f"), svc}, kept: []appspec.ResourceStatus{cm, svc},
			want: []appspec.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "Role"}, {Group: "apps", Kind: "Deployment"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, kindsLeftOut(tc.full, tc.kept)); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
		})
	}
}
