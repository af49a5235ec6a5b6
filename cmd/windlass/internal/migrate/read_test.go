package migrate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

func replicas(n int32) *int32 { return &n }

// Read finds the labelled Secrets, the ConfigMaps, the CRs and every
// application controller, and only ever gets and lists.
func TestRead(t *testing.T) {
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "argocd", Labels: labels}
	}
	kube := kubefake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: meta(ConfigMapName, nil), Data: map[string]string{"url": "https://argocd.example.com"}},
		&corev1.ConfigMap{ObjectMeta: meta(CmdParamsCMName, nil), Data: map[string]string{appNamespacesKey: " team-* "}},
		&corev1.ConfigMap{ObjectMeta: meta(KnownHostsCMName, nil), Data: map[string]string{knownHostsKey: "host ssh-ed25519 AAAA"}},
		&corev1.Secret{ObjectMeta: meta("repo", map[string]string{SecretTypeLabel: typeRepository})},
		&corev1.Secret{ObjectMeta: meta("unrelated", nil)},
		&corev1.ConfigMap{ObjectMeta: meta(NotificationsCMName, nil), Data: map[string]string{"service.slack": "token: $slack-token"}},
		&corev1.Secret{ObjectMeta: meta(NotificationsSecretName, nil), Data: map[string][]byte{"slack-token": []byte("xoxb")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other", Labels: map[string]string{SecretTypeLabel: typeCluster}}},
		&appsv1.StatefulSet{ObjectMeta: meta(ControllerName, nil), Spec: appsv1.StatefulSetSpec{Replicas: replicas(0)}},
		&appsv1.Deployment{ObjectMeta: meta("renamed", map[string]string{workloadNameLabel: ControllerName})},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "ctl", Namespace: "argocd-2", Labels: map[string]string{workloadNameLabel: ControllerName}}, Spec: appsv1.StatefulSetSpec{Replicas: replicas(3)}},
		&appsv1.Deployment{ObjectMeta: meta("argocd-server", map[string]string{workloadNameLabel: "argocd-server"}), Spec: appsv1.DeploymentSpec{Replicas: replicas(2)}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
	)
	app := obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: guestbook, namespace: argocd}\n")
	teamApp := obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: team-a}\n")
	otherApp := obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: stray, namespace: other}\n")
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{applicationsGVR: "ApplicationList", projectsGVR: "AppProjectList"}, &app, &teamApp, &otherApp)

	src, err := Read(t.Context(), kube, dyn, "argocd")
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, s := range src.Secrets {
		secrets = append(secrets, s.Name)
	}
	if d := cmp.Diff([]string{"repo"}, secrets); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}
	wantControllers := []Controller{{Kind: "StatefulSet", Name: ControllerName, Namespace: "argocd", Replicas: 0},
		{Kind: "Deployment", Name: "renamed", Namespace: "argocd", Replicas: 1},
		{Kind: "StatefulSet", Name: "ctl", Namespace: "argocd-2", Replicas: 3}}
	if d := cmp.Diff(wantControllers, src.Controllers); d != "" {
		t.Errorf("controllers (-want +got):\n%s", d)
	}
	var apps []string
	for _, a := range src.Applications {
		apps = append(apps, a.GetNamespace()+"/"+a.GetName())
	}
	if d := cmp.Diff([]string{"argocd/guestbook", "team-a/web"}, apps); d != "" {
		t.Errorf("applications (-want +got):\n%s", d)
	}
	if len(src.Applications) != 2 || len(src.Projects) != 0 || src.Settings["url"] == "" || src.RBAC != nil || src.KnownHosts == "" || src.AppNamespaces != "team-*" {
		t.Errorf("read %d apps, %d projects, settings %v, rbac %v, known hosts %q, app namespaces %q",
			len(src.Applications), len(src.Projects), src.Settings, src.RBAC, src.KnownHosts, src.AppNamespaces)
	}
	if src.Notifications["service.slack"] == "" || string(src.NotificationsSecret["slack-token"]) != "xoxb" {
		t.Errorf("notifications %v, secret keys %d; want argocd-notifications-cm and its secret", src.Notifications, len(src.NotificationsSecret))
	}
	for _, a := range append(kube.Actions(), dyn.Actions()...) {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("Read did %s %s", v, a.GetResource().Resource)
		}
	}
}

func TestMatchNamespace(t *testing.T) {
	tests := []struct {
		ns, patterns string
		want         bool
	}{
		{"team-a", "team-*", true},
		{"team-a", "apps, team-?", true},
		{"teams", "team-*", false},
		{"prod-eu", "/^prod-(eu|us)$/", true},
		{"prod-asia", "/^prod-(eu|us)$/", false},
		{"x", " , ", false},
	}
	for _, tt := range tests {
		if got, err := matchNamespace(tt.ns, tt.patterns); err != nil || got != tt.want {
			t.Errorf("matchNamespace(%q, %q) = %v, %v; want %v", tt.ns, tt.patterns, got, err, tt.want)
		}
	}
	for _, bad := range []string{"/(/", "[a"} {
		if _, err := matchNamespace("x", bad); err == nil || !strings.Contains(err.Error(), appNamespacesKey) {
			t.Errorf("matchNamespace(%q) error = %v, want one naming %s", bad, err, appNamespacesKey)
		}
	}
}

// A namespace without Argo CD is an error that names the flag.
func TestReadNoArgoCD(t *testing.T) {
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{applicationsGVR: "ApplicationList", projectsGVR: "AppProjectList"})
	_, err := Read(t.Context(), kubefake.NewClientset(), dyn, "argocd")
	if err == nil || !strings.Contains(err.Error(), "--namespace") {
		t.Fatalf("Read = %v, want an error naming --namespace", err)
	}
}
