package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// The manifests of an app whose live state does not change come back after
// the cache loses them. Its refreshes are answered from the compare memo,
// which loads no manifests: the API's request must render them again.
func TestExpiredManifestsOfUnchangedApp(t *testing.T) {
	ns, name := uniq("exp"), uniq("exp")
	repoURL, work := newRepo(t, name)
	push(t, work, map[string]string{"cm/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: steady\ndata:\n  k: v\n"})
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "cm", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	eventually(t, time.Minute, "the first comparison", func() (bool, string) {
		v := appView(t, name)
		return v.Status.SHA != "", string(v.Status.Sync)
	})
	syncApp(t, name)
	eventually(t, time.Minute, "Synced and Healthy", func() (bool, string) {
		v := appView(t, name)
		return v.Status.Sync == appspec.SyncSynced && v.Status.Health == appspec.HealthHealthy, fmt.Sprintf("%s/%s", v.Status.Sync, v.Status.Health)
	})

	evictManifests(t, name)
	path := "/api/v1/applications/" + name + "/manifests"
	if code := call(t, http.MethodGet, path, nil, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("manifests after eviction: status %d, want 503", code)
	}
	eventually(t, time.Minute, "the manifests rendered again", func() (bool, string) {
		var m api.ManifestsView
		code := call(t, http.MethodGet, path, nil, &m)
		return code == http.StatusOK && len(m.Manifests) == 1, fmt.Sprint(code, " ", len(m.Manifests))
	})
}

// evictManifests deletes the app's last rendered manifests from the cache,
// as their expiry would.
func evictManifests(t *testing.T, name string) {
	t.Helper()
	v, err := bed.temporal.QueryWorkflow(t.Context(), workflows.AppWorkflowID("default", name), "", workflows.QueryManifests)
	if err != nil {
		t.Fatal(err)
	}
	var ref *render.ManifestRef
	if err := v.Get(&ref); err != nil || ref == nil {
		t.Fatalf("manifests query: %v, %v", ref, err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: bed.env.RedisAddr})
	defer rdb.Close()
	if err := rdb.Del(t.Context(), ref.Key).Err(); err != nil {
		t.Fatal(err)
	}
}
