package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// newcomerFiles is one repository with an app of each tool: a plain
// directory, a Helm chart, a Kustomize overlay over a base and a Jsonnet
// file.
func newcomerFiles() map[string]string {
	files := guestbookFiles("gcr.io/heptio-images/ks-guestbook-demo:0.1")
	for p, c := range map[string]string{
		"helm/Chart.yaml":                      "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
		"helm/values.yaml":                     "greeting: hello\n",
		"helm/templates/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-helm\ndata:\n  greeting: {{ .Values.greeting }}\n",
		"kustomize/base/kustomization.yaml":    "resources: [cm.yaml]\n",
		"kustomize/base/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kust\ndata:\n  k: v\n",
		"kustomize/overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: dev-\n",
		"jsonnet/main.jsonnet":                 "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'jsonnet' }, data: { n: std.toString(1 + 1) } }\n",
	} {
		files[p] = c
	}
	return files
}

// TestNewcomerPath runs windlass dev as make run does (startDev), logs in
// with the password file it writes, then creates an app of each tool with
// the CLI, syncs it and sees it Synced and Healthy.
func TestNewcomerPath(t *testing.T) {
	repoURL, work := newRepo(t, uniq("newcomer"))
	push(t, work, newcomerFiles())
	dev := startDev(t)
	ns := uniq("newcomer")
	for _, app := range []struct{ name, source string }{
		{"dir", "path: guestbook"},
		{"helm", "path: helm"},
		{"kustomize", "path: kustomize/overlay"},
		{"jsonnet", "path: jsonnet\n    directory: {jsonnet: {}}"},
	} {
		t.Run(app.name, func(t *testing.T) {
			name := uniq("nc-" + app.name)
			dev.createApp(t, name, repoURL, app.source, ns)
			if out, stderr, code := dev.cli("", "app", "sync", name); code != 0 {
				t.Fatalf("sync: exit %d: %s%s", code, out, stderr)
			}
			eventually(t, 2*time.Minute, name+" Synced and Healthy", func() (bool, string) {
				v, state, ok := dev.app(name)
				st := v.Status
				return ok && st.Sync == "Synced" && st.Health == "Healthy" && len(st.Resources) > 0,
					fmt.Sprintf("%d resources, %s", len(st.Resources), state)
			})
		})
	}
	if _, err := os.Stat(filepath.Join(dev.dir, ".windlass", "git")); err != nil {
		t.Errorf("the Git cache is not under the relative data dir: %v", err)
	}
}
