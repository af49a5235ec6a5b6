package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

func TestRunHealth(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	scripts := filepath.Join(dir, "customizations")
	write("customizations/example.com/Widget/health.lua", `
if obj.status ~= nil and obj.status.phase == "Ready" then
  return {status = "Healthy", message = "widget ready"}
end
return {status = "Degraded", message = "widget " .. obj.metadata.name .. " is not ready"}`)
	write("customizations/example.com/Loop/health.lua", `while true do end`)
	write("customizations/example.com/Gadget/health.lua", `return {status = "Degraded"}`)

	deploy := write("deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, generation: 1}\nspec: {replicas: 2}\nstatus: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2}\n")
	crash := write("crash.json", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting"}}}]}}`)
	widget := write("widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nstatus: {phase: Pending}\n")
	loop := write("loop.yaml", "apiVersion: example.com/v1\nkind: Loop\nmetadata: {name: l}\n")
	two := write("two.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
	bad := write("bad.yaml", "apiVersion: v1\nkind: [unclosed\n")
	noKind := write("nokind.yaml", "metadata: {name: x}\n")
	unnamed := write("unnamed.yaml", "apiVersion: example.com/v1\nkind: Widget\nstatus: {phase: Ready}\n")
	cm := write("argocd-cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\ndata:\n  resource.customizations.health.example.com_Widget: 'return {status = \"Suspended\", message = \"from argocd-cm\"}'\n")
	badCM := write("bad-cm.yaml", "kind: Secret\n")
	gadget := write("gadget.yaml", "apiVersion: example.com/v1\nkind: Gadget\n")
	unnamedPod := write("unnamed-pod.yaml", "apiVersion: v1\nkind: Pod\nstatus: {phase: Pending}\n")

	tests := []struct {
		name    string
		args    []string
		stdin   string
		want    map[string]any // the JSON printed
		wantErr string         // a part of the error; cmdline.ErrUsage for usage errors
	}{
		{"healthy deployment", []string{"--object", deploy}, "", map[string]any{"status": "Healthy", "message": ""}, ""},
		{"degraded is not an error", []string{"--object", crash}, "", map[string]any{"status": "Degraded", "message": "back-off restarting"}, ""},
		{"lua script", []string{"--customizations", scripts, "--object", widget}, "", map[string]any{"status": "Degraded", "message": "widget w is not ready"}, ""},
		// The time limit, 1 ms, ends the loop long before the instruction
		// budget (10 million, tens of milliseconds on a fast machine) would.
		{"script limits", []string{"--customizations", scripts, "--object", loop, "--timeout", "1ms"}, "", map[string]any{"status": "Unknown", "message": "lua health script for example.com/Loop exceeded its time limit of 1ms", "scriptError": true}, ""},
		{"no metadata.name", []string{"--customizations", scripts, "--object", unnamed}, "", map[string]any{"status": "Healthy", "message": "widget ready"}, ""},
		{"no metadata at all", []string{"--object", unnamedPod}, "", map[string]any{"status": "Progressing", "message": "pod is pending"}, ""},
		{"default message without a name", []string{"--customizations", scripts, "--object", gadget}, "", map[string]any{"status": "Degraded", "message": "Gadget is Degraded"}, ""},
		{"argocd-cm wins", []string{"--customizations", scripts, "--argocd-cm", cm, "--object", widget}, "", map[string]any{"status": "Suspended", "message": "from argocd-cm"}, ""},
		{"bad argocd-cm", []string{"--argocd-cm", badCM, "--object", widget}, "", nil, "want ConfigMap"},
		{"stdin", []string{"--object", "-"}, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d}\nstatus: {phase: Lost}\n", map[string]any{"status": "Degraded", "message": "the claim lost its volume"}, ""},
		{"missing object flag", nil, "", nil, "usage"},
		{"stray argument", []string{"--object", deploy, "extra"}, "", nil, "usage"},
		{"unreadable file", []string{"--object", filepath.Join(dir, "nope.yaml")}, "", nil, "no such file"},
		{"invalid yaml", []string{"--object", bad}, "", nil, "invalid manifest"},
		{"two objects", []string{"--object", two}, "", nil, "holds 2 objects"},
		{"no kind", []string{"--object", noKind}, "", nil, "kind"},
		{"missing customizations", []string{"--customizations", filepath.Join(dir, "nope"), "--object", deploy}, "", nil, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runHealth(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("no error; printed %s", stdout.String())
				}
				if tt.wantErr == "usage" {
					if !errors.Is(err, cmdline.ErrUsage) || !strings.Contains(stderr.String(), "usage: windlass health") {
						t.Fatalf("err = %v, stderr = %q; want a usage error", err, stderr.String())
					}
				} else if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if stdout.Len() != 0 {
					t.Errorf("printed %q on an error", stdout.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("output %q is not a JSON object: %v", stdout.String(), err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}
