package migrate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Names Argo CD gives its objects.
const (
	ConfigMapName     = "argocd-cm"
	RBACConfigMapName = "argocd-rbac-cm"
	KnownHostsCMName  = "argocd-ssh-known-hosts-cm"
	CmdParamsCMName   = "argocd-cmd-params-cm"
	// appNamespacesKey lists the namespaces beyond Argo CD's own that hold
	// Applications ("apps in any namespace").
	appNamespacesKey   = "application.namespaces"
	SecretTypeLabel    = "argocd.argoproj.io/secret-type"
	ControllerName     = "argocd-application-controller"
	workloadNameLabel  = "app.kubernetes.io/name"
	knownHostsKey      = "ssh_known_hosts"
	argoGroupVersion   = "argoproj.io/v1alpha1"
	applicationsPlural = "applications"
	projectsPlural     = "appprojects"
)

var (
	applicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: applicationsPlural}
	projectsGVR     = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: projectsPlural}
)

// Source is what Read found of an Argo CD installation.
type Source struct {
	Namespace    string
	Applications []unstructured.Unstructured
	Projects     []unstructured.Unstructured
	// Settings is argocd-cm's data, RBAC argocd-rbac-cm's (nil when absent).
	Settings map[string]string
	RBAC     map[string]string
	// KnownHosts are the SSH known_hosts lines of argocd-ssh-known-hosts-cm.
	KnownHosts string
	// AppNamespaces is argocd-cmd-params-cm's application.namespaces.
	AppNamespaces string
	// Secrets are those labelled argocd.argoproj.io/secret-type.
	Secrets []corev1.Secret
	// Controllers are the application controller workloads.
	Controllers []Controller
}

// Controller is an Argo CD application controller workload.
type Controller struct {
	Kind, Name string
	Replicas   int32
}

// Running reports whether any application controller has replicas.
func (s *Source) Running() []Controller {
	var out []Controller
	for _, c := range s.Controllers {
		if c.Replicas > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Read reads the Argo CD installation in namespace with get and list
// calls only. Missing CRDs or ConfigMaps read as empty.
func Read(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, namespace string) (*Source, error) {
	s := &Source{Namespace: namespace}
	var err error
	if s.Applications, err = listCRs(ctx, dyn, applicationsGVR, namespace); err != nil {
		return nil, err
	}
	if s.Projects, err = listCRs(ctx, dyn, projectsGVR, namespace); err != nil {
		return nil, err
	}
	for _, cm := range []struct {
		name string
		dst  *map[string]string
	}{{ConfigMapName, &s.Settings}, {RBACConfigMapName, &s.RBAC}} {
		if *cm.dst, err = configMap(ctx, kube, namespace, cm.name); err != nil {
			return nil, err
		}
	}
	kh, err := configMap(ctx, kube, namespace, KnownHostsCMName)
	if err != nil {
		return nil, err
	}
	s.KnownHosts = kh[knownHostsKey]
	params, err := configMap(ctx, kube, namespace, CmdParamsCMName)
	if err != nil {
		return nil, err
	}
	s.AppNamespaces = strings.TrimSpace(params[appNamespacesKey])
	secrets, err := kube.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: SecretTypeLabel})
	if err != nil {
		return nil, fmt.Errorf("list the Secrets labelled %s in %s: %w", SecretTypeLabel, namespace, err)
	}
	s.Secrets = secrets.Items
	sort.Slice(s.Secrets, func(i, j int) bool { return s.Secrets[i].Name < s.Secrets[j].Name })
	if s.Controllers, err = controllers(ctx, kube, namespace); err != nil {
		return nil, err
	}
	if s.Settings == nil && len(s.Applications) == 0 && len(s.Projects) == 0 && len(s.Secrets) == 0 {
		return nil, fmt.Errorf("namespace %s holds no Argo CD: no %s, Applications, AppProjects or labelled Secrets (--namespace names Argo CD's)", namespace, ConfigMapName)
	}
	return s, nil
}

func listCRs(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) ([]unstructured.Unstructured, error) {
	l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // the CRD is not installed
	}
	if err != nil {
		return nil, fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].GetName() < l.Items[j].GetName() })
	return l.Items, nil
}

func configMap(ctx context.Context, kube kubernetes.Interface, ns, name string) (map[string]string, error) {
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", ns, name, err)
	}
	if cm.Data == nil {
		return map[string]string{}, nil
	}
	return cm.Data, nil
}

// controllers finds the application controller: the StatefulSet or
// Deployment of that name, or any labelled with it.
func controllers(ctx context.Context, kube kubernetes.Interface, ns string) ([]Controller, error) {
	var out []Controller
	is := func(m metav1.ObjectMeta) bool {
		return m.Name == ControllerName || m.Labels[workloadNameLabel] == ControllerName
	}
	replicas := func(r *int32) int32 {
		if r == nil {
			return 1
		}
		return *r
	}
	sts, err := kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list StatefulSets in %s: %w", ns, err)
	}
	for _, w := range sts.Items {
		if is(w.ObjectMeta) {
			out = append(out, Controller{Kind: "StatefulSet", Name: w.Name, Replicas: replicas(w.Spec.Replicas)})
		}
	}
	deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Deployments in %s: %w", ns, err)
	}
	for _, w := range deps.Items {
		if is(w.ObjectMeta) {
			out = append(out, Controller{Kind: "Deployment", Name: w.Name, Replicas: replicas(w.Spec.Replicas)})
		}
	}
	return out, nil
}
