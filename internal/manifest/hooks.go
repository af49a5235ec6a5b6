package manifest

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Hook annotations of Argo CD and Helm.
const (
	HookAnnotation                 = "argocd.argoproj.io/hook"
	HookDeletePolicyAnnotation     = "argocd.argoproj.io/hook-delete-policy"
	HelmHookAnnotation             = "helm.sh/hook"
	HelmHookWeightAnnotation       = "helm.sh/hook-weight"
	HelmHookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"
)

// Hook delete policies. BeforeHookCreation is the default.
const (
	DeleteOnSucceeded         = "HookSucceeded"
	DeleteOnFailed            = "HookFailed"
	DeleteBeforeHookCreation  = "BeforeHookCreation"
	helmBeforeHookCreation    = "before-hook-creation"
	helmDeleteOnHookSucceeded = "hook-succeeded"
	helmDeleteOnHookFailed    = "hook-failed"
)

// helmPhases maps the Helm hooks Windlass runs onto sync phases. Every
// other Helm hook (test, *-delete, *-rollback) is skipped.
var helmPhases = map[string]string{
	"crd-install":  PhasePreSync,
	"pre-install":  PhasePreSync,
	"pre-upgrade":  PhasePreSync,
	"post-install": PhasePostSync,
	"post-upgrade": PhasePostSync,
}

var helmDeletePolicies = map[string]string{
	helmBeforeHookCreation:    DeleteBeforeHookCreation,
	helmDeleteOnHookSucceeded: DeleteOnSucceeded,
	helmDeleteOnHookFailed:    DeleteOnFailed,
}

// Hook is how an object takes part in a sync, read from its annotations.
type Hook struct {
	// Phases are the phases the object runs in as a hook, in sync order;
	// empty for a plain resource (which belongs to the Sync phase).
	Phases []string
	// DeletePolicies say when the hook is deleted; BeforeHookCreation
	// when none is given.
	DeletePolicies []string
	// Skip says the object is never applied: Argo CD's Skip hook, or a
	// Helm hook of a kind Windlass does not run (test, delete, rollback).
	Skip bool
	// Note says what was ignored or why the object is skipped.
	Note string
}

// IsHook reports whether the object is a hook (or skipped) rather than a
// resource of the Sync phase.
func (h Hook) IsHook() bool { return len(h.Phases) > 0 || h.Skip }

// In reports whether the hook runs in phase.
func (h Hook) In(phase string) bool { return slices.Contains(h.Phases, phase) }

// Deletes reports whether policy is one of the hook's delete policies.
func (h Hook) Deletes(policy string) bool { return slices.Contains(h.DeletePolicies, policy) }

// HookOf reads obj's hook annotations with Argo CD's rules: the Argo CD
// hook annotation (a comma list) wins; Helm's helm.sh/hook counts only
// when it is absent or names no known phase. Unknown hook types are
// ignored with a note.
func HookOf(obj *unstructured.Unstructured) Hook {
	ann := obj.GetAnnotations()
	var h Hook
	var notes []string
	for _, t := range csv(ann[HookAnnotation]) {
		switch t {
		case PhasePreSync, PhaseSync, PhasePostSync, PhaseSyncFail, PhasePostDelete:
			h.Phases = append(h.Phases, t)
		case PhaseSkip:
			h.Skip = true
		default:
			notes = append(notes, "unknown hook type "+t+" ignored")
		}
	}
	if len(h.Phases) == 0 && !h.Skip {
		if helm, ok := ann[HelmHookAnnotation]; ok {
			var unsupported []string
			for _, t := range csv(helm) {
				if p, ok := helmPhases[t]; ok {
					h.Phases = append(h.Phases, p)
				} else {
					unsupported = append(unsupported, t)
				}
			}
			if len(unsupported) > 0 {
				notes = append(notes, "Helm hook "+strings.Join(unsupported, ",")+" is not run by Windlass")
			}
			if len(h.Phases) == 0 {
				h.Skip = true
			}
		}
	}
	if h.Skip {
		h.Phases = nil
		notes = append(notes, "skipped")
	}
	slices.SortFunc(h.Phases, func(a, b string) int { return PhaseRank(a) - PhaseRank(b) })
	h.Phases = slices.Compact(h.Phases)
	if h.IsHook() {
		h.DeletePolicies = deletePolicies(ann)
	}
	h.Note = strings.Join(notes, "; ")
	return h
}

func deletePolicies(ann map[string]string) []string {
	var out []string
	for _, p := range csv(ann[HookDeletePolicyAnnotation]) {
		switch p {
		case DeleteOnSucceeded, DeleteOnFailed, DeleteBeforeHookCreation:
			out = append(out, p)
		}
	}
	for _, p := range csv(ann[HelmHookDeletePolicyAnnotation]) {
		if mapped, ok := helmDeletePolicies[p]; ok {
			out = append(out, mapped)
		}
	}
	if len(out) == 0 {
		return []string{DeleteBeforeHookCreation}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// csv splits a comma list, trimming blanks and dropping empty items.
func csv(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
