package migrate

import (
	"context"
	"fmt"
	"path"
	"regexp"
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
	// NotificationsCMName and NotificationsSecretName are Argo CD
	// Notifications' configuration and credentials.
	NotificationsCMName     = "argocd-notifications-cm"
	NotificationsSecretName = "argocd-notifications-secret"
	CmdParamsCMName         = "argocd-cmd-params-cm"
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
	// Notifications is argocd-notifications-cm's data, NotificationsSecret
	// argocd-notifications-secret's (nil when absent).
	Notifications       map[string]string
	NotificationsSecret map[string][]byte
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
	Kind, Namespace, Name string
	Replicas              int32
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
	}{{ConfigMapName, &s.Settings}, {RBACConfigMapName, &s.RBAC}, {NotificationsCMName, &s.Notifications}} {
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
	if s.AppNamespaces != "" {
		more, err := appsElsewhere(ctx, kube, dyn, namespace, s.AppNamespaces)
		if err != nil {
			return nil, err
		}
		s.Applications = append(s.Applications, more...)
	}
	secrets, err := kube.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: SecretTypeLabel})
	if err != nil {
		return nil, fmt.Errorf("list the Secrets labelled %s in %s: %w", SecretTypeLabel, namespace, err)
	}
	s.Secrets = secrets.Items
	ns, err := kube.CoreV1().Secrets(namespace).Get(ctx, NotificationsSecretName, metav1.GetOptions{})
	switch {
	case err == nil:
		s.NotificationsSecret = ns.Data
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get Secret %s/%s: %w", namespace, NotificationsSecretName, err)
	}
	sort.Slice(s.Secrets, func(i, j int) bool { return s.Secrets[i].Name < s.Secrets[j].Name })
	if s.Controllers, err = controllers(ctx, kube, namespace); err != nil {
		return nil, err
	}
	if s.Settings == nil && len(s.Applications) == 0 && len(s.Projects) == 0 && len(s.Secrets) == 0 {
		return nil, fmt.Errorf("namespace %s holds no Argo CD: no %s, Applications, AppProjects or labelled Secrets (--namespace names Argo CD's)", namespace, ConfigMapName)
	}
	return s, nil
}

// appsElsewhere lists the Applications of the namespaces other than
// Argo CD's that patterns (application.namespaces: comma-separated globs,
// or regular expressions between slashes) name.
func appsElsewhere(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, argoNS, patterns string) ([]unstructured.Unstructured, error) {
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list namespaces for %s %q: %w", appNamespacesKey, patterns, err)
	}
	var out []unstructured.Unstructured
	for _, ns := range nss.Items {
		if ns.Name == argoNS {
			continue
		}
		ok, err := matchNamespace(ns.Name, patterns)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		apps, err := listCRs(ctx, dyn, applicationsGVR, ns.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, apps...)
	}
	return out, nil
}

// matchNamespace says whether ns matches one of Argo CD's namespace
// patterns: globs, or regular expressions written /like this/.
func matchNamespace(ns, patterns string) (bool, error) {
	for _, p := range strings.Split(patterns, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if len(p) > 1 && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") {
			re, err := regexp.Compile(p[1 : len(p)-1])
			if err != nil {
				return false, fmt.Errorf("%s: pattern %q: %w", appNamespacesKey, p, err)
			}
			if re.MatchString(ns) {
				return true, nil
			}
			continue
		}
		ok, err := path.Match(p, ns)
		if err != nil {
			return false, fmt.Errorf("%s: pattern %q: %w", appNamespacesKey, p, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
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

// controllers finds the application controller: a StatefulSet or
// Deployment of that name in Argo CD's namespace, or one labelled with it
// in any namespace (when the caller may list them cluster-wide).
func controllers(ctx context.Context, kube kubernetes.Interface, ns string) ([]Controller, error) {
	var out []Controller
	seen := map[string]bool{}
	add := func(kind string, m metav1.ObjectMeta, r *int32) {
		key := kind + "/" + m.Namespace + "/" + m.Name
		if seen[key] || (m.Name != ControllerName && m.Labels[workloadNameLabel] != ControllerName) {
			return
		}
		seen[key] = true
		n := int32(1)
		if r != nil {
			n = *r
		}
		out = append(out, Controller{Kind: kind, Namespace: m.Namespace, Name: m.Name, Replicas: n})
	}
	labelled := metav1.ListOptions{LabelSelector: workloadNameLabel + "=" + ControllerName}
	for _, l := range []struct {
		ns   string
		opts metav1.ListOptions
	}{{ns, metav1.ListOptions{}}, {metav1.NamespaceAll, labelled}} {
		sts, err := kube.AppsV1().StatefulSets(l.ns).List(ctx, l.opts)
		if l.ns == metav1.NamespaceAll && apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list StatefulSets: %w", err)
		}
		for _, w := range sts.Items {
			add("StatefulSet", w.ObjectMeta, w.Spec.Replicas)
		}
		deps, err := kube.AppsV1().Deployments(l.ns).List(ctx, l.opts)
		if l.ns == metav1.NamespaceAll && apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list Deployments: %w", err)
		}
		for _, w := range deps.Items {
			add("Deployment", w.ObjectMeta, w.Spec.Replicas)
		}
	}
	return out, nil
}
