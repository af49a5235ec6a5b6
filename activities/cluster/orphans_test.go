package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// Orphans finds what no app tracks in the app's namespace: not the app's
// own objects, not an object with an owner, not what the settings ignore.
func TestOrphans(t *testing.T) {
	h := newHarness(t)
	tg, _ := h.synced("web", "guestbook.yaml", "sync/default/web/1")
	cms := h.kc.CoreV1().ConfigMaps(h.ns)
	stray, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stray"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: stray.Name, UID: stray.UID}}}}
	if _, err := cms.Create(t.Context(), owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.kc.CoreV1().Secrets(h.ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ignored-token"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	in := OrphansInput{Target: tg, Namespaces: []string{h.ns},
		Settings: appspec.OrphanedResources{Warn: true, Ignore: []appspec.OrphanedResourceKey{{Kind: "Secret", Name: "ignored-*"}}}}
	got := must[OrphansOutput](h, OrphansName, in)
	want := OrphansOutput{Count: 1, Resources: []appspec.ResourceKey{{Kind: "ConfigMap", Namespace: h.ns, Name: "stray"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Orphans() mismatch (-want +got):\n%s", diff)
	}
	// Without the ignore entry the Secret is an orphan too.
	in.Settings.Ignore = nil
	if got := must[OrphansOutput](h, OrphansName, in); got.Count != 2 {
		t.Errorf("Orphans() without ignore = %+v, want the Secret too", got)
	}
}
