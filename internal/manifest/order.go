package manifest

import (
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SyncWaveAnnotation is Argo CD's sync-wave annotation.
const SyncWaveAnnotation = "argocd.argoproj.io/sync-wave"

// kindOrder is the order in which kinds are applied within a wave, the same
// as Argo CD's (namespaces and CRDs first, workloads after their config).
var kindOrder = func() map[string]int {
	kinds := []string{
		"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
		"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap",
		"StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition",
		"ClusterRole", "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList",
		"Role", "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
		"ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler",
		"StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
	}
	m := make(map[string]int, len(kinds))
	for i, k := range kinds {
		m[k] = i
	}
	return m
}()

// Wave returns obj's sync wave (0 when unset or not a number).
func Wave(obj *unstructured.Unstructured) int {
	w, err := strconv.Atoi(strings.TrimSpace(obj.GetAnnotations()[SyncWaveAnnotation]))
	if err != nil {
		return 0
	}
	return w
}

// Sort orders objects for apply: by wave, then kind order (unknown kinds
// last, by name), then namespace and name.
func Sort(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool { return less(objs[i], objs[j]) })
}

func less(a, b *unstructured.Unstructured) bool {
	if wa, wb := Wave(a), Wave(b); wa != wb {
		return wa < wb
	}
	ka, kb := kindRank(a.GetKind()), kindRank(b.GetKind())
	if ka != kb {
		return ka < kb
	}
	if a.GetKind() != b.GetKind() {
		return a.GetKind() < b.GetKind()
	}
	if a.GetNamespace() != b.GetNamespace() {
		return a.GetNamespace() < b.GetNamespace()
	}
	return a.GetName() < b.GetName()
}

func kindRank(kind string) int {
	if r, ok := kindOrder[kind]; ok {
		return r
	}
	return len(kindOrder)
}
