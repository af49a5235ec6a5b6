package manifest

import (
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SyncWaveAnnotation is Argo CD's sync-wave annotation.
const SyncWaveAnnotation = "argocd.argoproj.io/sync-wave"

// Sync phases, in the order a sync runs them. SyncFail runs only when a
// sync fails, PostDelete only when the app is deleted, and Skip never.
const (
	PhasePreSync    = "PreSync"
	PhaseSync       = "Sync"
	PhasePostSync   = "PostSync"
	PhaseSyncFail   = "SyncFail"
	PhasePostDelete = "PostDelete"
	PhaseSkip       = "Skip"
)

var phaseOrder = map[string]int{
	PhasePreSync: 0, PhaseSync: 1, PhasePostSync: 2, PhaseSyncFail: 3, PhasePostDelete: 4,
}

// PhaseRank is the position of phase in a sync (unknown phases last).
func PhaseRank(phase string) int {
	if r, ok := phaseOrder[phase]; ok {
		return r
	}
	return len(phaseOrder)
}

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

// Wave returns obj's sync wave: the sync-wave annotation, else Helm's
// hook-weight, else 0. A value that is not a number counts as unset.
func Wave(obj *unstructured.Unstructured) int {
	ann := obj.GetAnnotations()
	for _, key := range []string{SyncWaveAnnotation, HelmHookWeightAnnotation} {
		if v, ok := ann[key]; ok {
			if w, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return w
			}
		}
	}
	return 0
}

// Sort orders objects for apply: by wave, then kind order (unknown kinds
// last, by name), then namespace and name. It ignores phases: order the
// objects of one phase with it.
func Sort(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool { return Less(objs[i], objs[j]) })
}

// Less reports whether a is applied before b within one phase: by wave,
// then kind order, then namespace and name.
func Less(a, b *unstructured.Unstructured) bool {
	if wa, wb := Wave(a), Wave(b); wa != wb {
		return wa < wb
	}
	return KindLess(a, b)
}

// KindLess orders objects of one wave: by kind order (unknown kinds last,
// by kind name), then namespace and name.
func KindLess(a, b *unstructured.Unstructured) bool {
	ka, kb := KindRank(a.GetKind()), KindRank(b.GetKind())
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

// KindRank is kind's position in the apply order; unknown kinds share the
// last position.
func KindRank(kind string) int {
	if r, ok := kindOrder[kind]; ok {
		return r
	}
	return len(kindOrder)
}
