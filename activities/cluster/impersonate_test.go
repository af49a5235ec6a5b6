package cluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With sync impersonation on, a sync applies and prunes as the project's
// service account: the API server refuses what it may not do, and allows
// it once a RoleBinding grants it. Without a service account the sync
// fails before it writes anything.
func TestSyncImpersonation(t *testing.T) {
	h := newHarness(t, WithSyncImpersonation(true))
	ctx := t.Context()
	if _, err := h.kc.CoreV1().ServiceAccounts(h.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tg := h.target("web")
	ref := h.put(h.fixture("guestbook.yaml")...)
	op := SyncOperation{SyncID: "sync/default/web/1", Prune: true}
	plan := must[PlanOutput](h, PlanName, PlanInput{Target: tg, Manifests: ref, Operation: op})
	wave := func(tg Target) error {
		_, err := run[WaveOutput](h, ApplyWaveName, WaveInput{Target: tg, Manifests: ref, Operation: op, Step: plan.Steps[0]})
		return err
	}

	err := wave(tg)
	if typ, permanent := errorType(err); typ != "NoServiceAccount" || !permanent || !strings.Contains(err.Error(), "destinationServiceAccounts") {
		t.Fatalf("apply without a service account: err = %v, want a permanent NoServiceAccount error", err)
	}

	tg.ServiceAccount = "system:serviceaccount:" + h.ns + ":deployer"
	err = wave(tg)
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), tg.ServiceAccount) {
		t.Fatalf("apply as a service account without rights: err = %v, want forbidden for %s", err, tg.ServiceAccount)
	}
	if _, err := h.kc.CoreV1().ConfigMaps(h.ns).Get(ctx, "guestbook-config", metav1.GetOptions{}); err == nil {
		t.Fatal("a refused apply created the ConfigMap")
	}

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "apps"}, Resources: []string{"configmaps", "services", "deployments"}, Verbs: []string{"*"}}}}
	if _, err := h.kc.RbacV1().Roles(h.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: h.ns}}}
	if _, err := h.kc.RbacV1().RoleBindings(h.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the RoleBinding lets the service account apply", func() bool { return wave(tg) == nil })
	for _, s := range plan.Steps[1:] {
		must[WaveOutput](h, ApplyWaveName, WaveInput{Target: tg, Manifests: ref, Operation: op, Step: s})
	}
	if _, err := h.kc.AppsV1().Deployments(h.ns).Get(ctx, "guestbook-ui", metav1.GetOptions{}); err != nil {
		t.Fatalf("the impersonated sync did not apply the Deployment: %v", err)
	}
}
