package main

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRenderHelm runs the Helm flags through the worker's Helm tool.
func TestRenderHelm(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeTree(t, root, map[string]string{
		"chart/Chart.yaml":      "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":     "color: red\nsize: small\nport: 80\nowner: nobody\n",
		"chart/values-big.yaml": "size: big\n",
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  namespace: {{ .Release.Namespace }}
data:
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  port: {{ .Values.port | quote }}
  owner: {{ .Values.owner | quote }}
`,
	})
	writeTree(t, outside, map[string]string{"local.yaml": "owner: me\n"})
	out, stderr, err := renderCLI(t, "--root", root, "--path", "chart", "--release-name", "prod", "--namespace", "shop",
		"--helm-set", "color=blue", "--helm-set-string", "port=8080",
		"--values", filepath.Join(root, "chart", "values-big.yaml"), "--values", filepath.Join(outside, "local.yaml"))
	if err != nil {
		t.Fatalf("render: %v\nstderr: %s", err, stderr)
	}
	want := "apiVersion: v1\ndata:\n  color: blue\n  owner: me\n  port: \"8080\"\n  size: big\nkind: ConfigMap\nmetadata:\n  name: prod-settings\n  namespace: shop\n"
	if d := cmp.Diff(want, out); d != "" {
		t.Fatalf("output (-want +got):\n%s", d)
	}
}
