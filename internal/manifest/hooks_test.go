package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func annotated(kind, name string, ann map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind(kind)
	o.SetName(name)
	o.SetAnnotations(ann)
	return o
}

func TestHookOf(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want Hook
		note string
	}{
		{name: "plain resource", want: Hook{}},
		{name: "argo list", ann: map[string]string{HookAnnotation: "PostSync, PreSync"},
			want: Hook{Phases: []string{PhasePreSync, PhasePostSync}, DeletePolicies: []string{DeleteBeforeHookCreation}}},
		{name: "argo policies", ann: map[string]string{HookAnnotation: "Sync", HookDeletePolicyAnnotation: "HookSucceeded,HookFailed"},
			want: Hook{Phases: []string{PhaseSync}, DeletePolicies: []string{DeleteOnFailed, DeleteOnSucceeded}}},
		{name: "skip", ann: map[string]string{HookAnnotation: "Skip"}, want: Hook{Skip: true, DeletePolicies: []string{DeleteBeforeHookCreation}}, note: "skipped"},
		{name: "unknown argo type ignored", ann: map[string]string{HookAnnotation: "PreSnyc,PostSync"},
			want: Hook{Phases: []string{PhasePostSync}, DeletePolicies: []string{DeleteBeforeHookCreation}}, note: "unknown hook type PreSnyc"},
		{name: "helm pre and post", ann: map[string]string{HelmHookAnnotation: "pre-install,pre-upgrade,post-install", HelmHookDeletePolicyAnnotation: "before-hook-creation,hook-succeeded"},
			want: Hook{Phases: []string{PhasePreSync, PhasePostSync}, DeletePolicies: []string{DeleteBeforeHookCreation, DeleteOnSucceeded}}},
		{name: "helm test skipped", ann: map[string]string{HelmHookAnnotation: "test"},
			want: Hook{Skip: true, DeletePolicies: []string{DeleteBeforeHookCreation}}, note: "Helm hook test is not run"},
		{name: "helm delete and rollback skipped, upgrade kept", ann: map[string]string{HelmHookAnnotation: "pre-delete,post-rollback,post-upgrade"},
			want: Hook{Phases: []string{PhasePostSync}, DeletePolicies: []string{DeleteBeforeHookCreation}}, note: "pre-delete,post-rollback"},
		{name: "argo wins over helm", ann: map[string]string{HookAnnotation: "SyncFail", HelmHookAnnotation: "pre-install"},
			want: Hook{Phases: []string{PhaseSyncFail}, DeletePolicies: []string{DeleteBeforeHookCreation}}},
		{name: "post delete", ann: map[string]string{HookAnnotation: "PostDelete"},
			want: Hook{Phases: []string{PhasePostDelete}, DeletePolicies: []string{DeleteBeforeHookCreation}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HookOf(annotated("Job", "j", tt.ann))
			note := got.Note
			got.Note = ""
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("HookOf (-want +got):\n%s", d)
			}
			if !strings.Contains(note, tt.note) || (tt.note == "" && note != "") {
				t.Fatalf("note = %q, want one containing %q", note, tt.note)
			}
		})
	}
}

func TestWaveAndPhaseOrder(t *testing.T) {
	tests := []struct {
		ann  map[string]string
		want int
	}{
		{nil, 0},
		{map[string]string{SyncWaveAnnotation: "-2"}, -2},
		{map[string]string{SyncWaveAnnotation: "x"}, 0},
		{map[string]string{HelmHookWeightAnnotation: "5"}, 5},
		{map[string]string{SyncWaveAnnotation: "1", HelmHookWeightAnnotation: "5"}, 1},
	}
	for _, tt := range tests {
		if got := Wave(annotated("Job", "j", tt.ann)); got != tt.want {
			t.Errorf("Wave(%v) = %d, want %d", tt.ann, got, tt.want)
		}
	}
	phases := []string{PhasePostDelete, PhaseSync, "Other", PhaseSyncFail, PhasePreSync, PhasePostSync}
	ranks := make([]int, len(phases))
	for i, p := range phases {
		ranks[i] = PhaseRank(p)
	}
	if d := cmp.Diff([]int{4, 1, 5, 3, 0, 2}, ranks); d != "" {
		t.Fatalf("phase ranks (-want +got):\n%s", d)
	}
}

func TestOptions(t *testing.T) {
	o := annotated("Deployment", "d", map[string]string{SyncOptionsAnnotation: "Prune=false, Replace=true", CompareOptionsAnnotation: "IgnoreExtraneous"})
	opts := ParseOptions([]string{"Prune=true", "CreateNamespace=true"}, SyncOptionsOf(o))
	if !opts.Is("Prune", "false") || !opts.True("Replace") || !opts.True("CreateNamespace") || opts.True("Validate") {
		t.Fatalf("options = %v", opts)
	}
	if !ParseOptions(CompareOptionsOf(o)).True("IgnoreExtraneous") {
		t.Fatal("IgnoreExtraneous not read")
	}
}

func TestHookNamesAndOwnership(t *testing.T) {
	gen := annotated("Job", "", nil)
	gen.SetGenerateName("migrate-")
	a, b := HookName(gen, "sync/default/app/1", PhasePreSync), HookName(gen, "sync/default/app/1", PhasePreSync)
	if a != b || !strings.HasPrefix(a, "migrate-") || len(a) != len("migrate-")+10 {
		t.Fatalf("HookName not stable: %q %q", a, b)
	}
	if c := HookName(gen, "sync/default/app/2", PhasePreSync); c == a {
		t.Fatal("another sync must get another name")
	}
	if c := HookName(gen, "sync/default/app/1", PhasePostSync); c == a {
		t.Fatal("another phase must get another name")
	}
	named := annotated("Job", "fixed", nil)
	if HookName(named, "s", PhaseSync) != "fixed" {
		t.Fatal("a named hook keeps its name")
	}
	StampHook(gen, "sync/default/app/1", PhasePreSync)
	SetTracking("default", "app", gen)
	if gen.GetName() != a || gen.GetGenerateName() != "" || !CreatedBy(gen, "sync/default/app/1", PhasePreSync) || CreatedBy(gen, "sync/default/app/1", PhaseSync) {
		t.Fatalf("stamped hook = %v", gen.Object["metadata"])
	}
	if got := gen.GetLabels()[SyncIDLabel]; got != SyncIDHash("sync/default/app/1") {
		t.Fatalf("sync id label = %q", got)
	}
	if !OwnedBy("default", "app", gen) || OwnedBy("default", "other", gen) {
		t.Fatal("OwnedBy")
	}
	copied := gen.DeepCopy()
	copied.SetName("copy")
	if OwnedBy("default", "app", copied) {
		t.Fatal("a copied tracking annotation must not make the copy owned")
	}
	if v := AppLabelValue("default", "app"); v != "default.app" {
		t.Fatalf("AppLabelValue = %q", v)
	}
	long := AppLabelValue(strings.Repeat("p", 40), strings.Repeat("a", 40))
	if len(long) > 63 || strings.Contains(long, ".") {
		t.Fatalf("long AppLabelValue = %q", long)
	}
}
