package roles

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/probe"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// TestServerTreeHealthIsTheWorkers runs `windlass dev`, whose worker has a
// Lua health script for a custom resource, and a `windlass server` next to
// it. The server runs no worker; its tree shows the custom resource with
// the script's health and message, as the app's status does, where the
// built-in checks would call it Healthy.
func TestServerTreeHealthIsTheWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal and the test bed")
	}
	env, cleanup, err := testbed.Shared(t.Context(), "cmd-treehealth")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	sfx := suffix()
	group := "th" + sfx + ".windlass.dev"

	// The worker's customizations: a script for the resource's kind.
	scripts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(scripts, group, "Sprocket"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `return {status = "Degraded", message = "sprocket " .. obj.metadata.name .. " has " .. obj.spec.teeth .. " teeth"}`
	if err := os.WriteFile(filepath.Join(scripts, group, "Sprocket", "health.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}

	// A repository with the CRD and one resource of it.
	manifests := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sprockets.` + group + `}
spec:
  group: ` + group + `
  scope: Namespaced
  names: {kind: Sprocket, plural: sprockets, singular: sprocket}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {teeth: {type: integer}}}
---
apiVersion: ` + group + `/v1
kind: Sprocket
metadata: {name: s1}
spec: {teeth: 12}
`
	repoURL := gitApp(t, "treehealth.git", "all.yaml", manifests)

	// The CRD is cluster-wide: it goes with the test, and so do the
	// app's namespace and the management namespace.
	t.Cleanup(func() {
		dyn, err := dynamic.NewForConfig(env.Cluster.Config)
		if err != nil {
			return
		}
		crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		_ = dyn.Resource(crds).Delete(context.Background(), "sprockets."+group, metav1.DeleteOptions{})
		for _, ns := range []string{"th-" + sfx, "windlass-th-" + sfx} {
			_ = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
	})

	ctx, cancel := context.WithCancel(t.Context())
	dataDir := t.TempDir()
	devAPI, serverAPI, temporalAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	mgmt := "windlass-th-" + sfx
	clearProdEnv(t)
	t.Setenv("KUBECONFIG", env.Cluster.Kubeconfig)
	devCfg, err := loadDevConfig([]string{"--data-dir", dataDir, "--api-address", devAPI, "--temporal-address", temporalAddr,
		"--temporal-ui-address", "off", "--redis-address", env.RedisAddr, "--management-namespace", mgmt,
		"--resource-customizations", scripts, "--self-heal-sweep", "-1s", "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	devDone := make(chan error, 1)
	go func() { devDone <- runDev(ctx, devCfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-devDone:
		case <-time.After(30 * time.Second):
			t.Error("windlass dev did not stop")
		}
	})
	ready := func(api string, done chan error) {
		t.Helper()
		eventually(t, 2*time.Minute, api+" to serve", func() bool {
			select {
			case err := <-done:
				t.Fatalf("ended: %v", err)
			default:
			}
			resp, err := http.Get("http://" + api + probe.ReadyPath)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	ready(devAPI, devDone)

	srvCfg, err := loadServerConfig([]string{"--api-address", serverAPI, "--temporal-address", temporalAddr,
		"--redis-address", env.RedisAddr, "--management-namespace", mgmt, "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	srvDone := make(chan error, 1)
	sctx, scancel := context.WithCancel(ctx)
	go func() { srvDone <- runServer(sctx, srvCfg) }()
	t.Cleanup(func() { scancel(); <-srvDone })
	ready(serverAPI, srvDone)

	pw, err := os.ReadFile(filepath.Join(dataDir, "initial-admin-password"))
	if err != nil {
		t.Fatal(err)
	}
	login := func(api string) string {
		var session struct{ Token string }
		apiCall(t, "POST", "http://"+api+"/api/v1/session", "", map[string]string{"username": "admin", "password": strings.TrimSpace(string(pw))}, &session)
		return session.Token
	}
	devToken, serverToken := login(devAPI), login(serverAPI)
	name, ns := "th-"+sfx, "th-"+sfx
	apiCall(t, "POST", "http://"+devAPI+"/api/v1/applications", devToken, map[string]any{
		"name": name, "project": "default",
		"source":      map[string]string{"repoURL": repoURL, "path": "app", "targetRevision": "HEAD"},
		"destination": map[string]string{"server": appspec.InClusterServer, "namespace": ns},
		"syncPolicy":  map[string]any{"syncOptions": []string{"CreateNamespace=true"}},
	}, nil)
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", "http://"+devAPI+"/api/v1/applications/"+name+"?cascade=true", nil)
		req.Header.Set("Authorization", "Bearer "+devToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	apiCall(t, "POST", "http://"+devAPI+"/api/v1/applications/"+name+"/sync", devToken, map[string]any{}, nil)

	want := appspec.ResourceStatus{Health: appspec.HealthDegraded, HealthMessage: "sprocket s1 has 12 teeth"}
	var status appspec.ResourceStatus
	eventually(t, 2*time.Minute, "the app's status to show the script's health", func() bool {
		var view workflows.AppView
		apiCall(t, "GET", "http://"+devAPI+"/api/v1/applications/"+name, devToken, nil, &view)
		for _, r := range view.Status.Resources {
			if r.Kind == "Sprocket" {
				status = r
			}
		}
		return status.Health == want.Health && status.HealthMessage == want.HealthMessage
	})

	// The server's tree, which the workers' scripts reach through Redis.
	var node cluster.ResourceNode
	eventually(t, time.Minute, "the server's tree to list the resource", func() bool {
		var tree cluster.ResourceTreeOutput
		apiCall(t, "GET", "http://"+serverAPI+"/api/v1/applications/"+name+"/tree", serverToken, nil, &tree)
		for _, n := range tree.Nodes {
			if n.Kind == "Sprocket" {
				node = n
				return true
			}
		}
		return false
	})
	if node.Health != status.Health || node.HealthMessage != status.HealthMessage {
		t.Errorf("server tree: %s %q; app status: %s %q", node.Health, node.HealthMessage, status.Health, status.HealthMessage)
	}
}
