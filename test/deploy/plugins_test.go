package deploy

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	corev1 "k8s.io/api/core/v1"
)

const (
	workerKey = "apps/Deployment windlass/windlass-worker"
	tokenDir  = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// TestPluginSidecarHoldsNoCredentials renders the worker as the overlays
// and the chart (default values, the ha values, Temporal mTLS) do, and
// checks that its plugins sidecar can reach no credential: the pod mounts
// no service account token, the sidecar mounts only emptyDirs and takes
// no variables from the worker's ConfigMap or Secret, and the worker
// alone mounts a projected token where client-go looks for it. The
// worker's plugin server address is the sidecar's socket.
func TestPluginSidecarHoldsNoCredentials(t *testing.T) {
	renders := map[string][]*unstructured.Unstructured{
		"kustomize dev": kustomize(t, "overlays/dev"),
		"kustomize ha":  kustomize(t, "overlays/ha"),
	}
	for name, values := range map[string]string{
		"helm defaults": "",
		"helm ha":       "worker:\n  replicas: 3\n",
		"helm mtls":     "temporal:\n  tls:\n    enabled: true\n    mtls: true\n    existingSecret: temporal-client\n",
		"helm image":    "worker:\n  plugins:\n    image: registry.example.com/plugins:1.0\n",
	} {
		objs, err := helmChart(t, values)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		renders[name] = objs
	}
	for name, objs := range renders {
		t.Run(name, func(t *testing.T) {
			obj := byKey(t, objs)[workerKey]
			if obj == nil {
				t.Fatal("no worker Deployment")
			}
			var d struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
				t.Fatal(err)
			}
			checkPluginPod(t, d.Spec.Template.Spec)
		})
	}
}

func checkPluginPod(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Fatal("the pod mounts the service account token into every container")
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	containers := map[string]corev1.Container{}
	for _, c := range pod.Containers {
		containers[c.Name] = c
	}
	worker, plugins := containers["worker"], containers["plugins"]
	if plugins.Name == "" {
		t.Fatal("no plugins sidecar")
	}
	if !slices.Equal(plugins.Args, []string{"plugin-server"}) {
		t.Errorf("sidecar args %v, want [plugin-server]", plugins.Args)
	}
	if len(plugins.EnvFrom) > 0 {
		t.Errorf("the sidecar takes the worker's variables: %+v", plugins.EnvFrom)
	}
	listen := ""
	for _, e := range plugins.Env {
		if e.ValueFrom != nil || !strings.HasPrefix(e.Name, "WINDLASS_PLUGIN_SERVER_") {
			t.Errorf("sidecar variable %s: only its own literal settings belong there", e.Name)
		}
		if e.Name == "WINDLASS_PLUGIN_SERVER_LISTEN" {
			listen = e.Value
		}
	}
	sidecarVolumes := map[string]string{}
	for _, m := range plugins.VolumeMounts {
		v := volumes[m.Name]
		if v.EmptyDir == nil {
			t.Errorf("the sidecar mounts %s (%s), which is not an emptyDir", m.Name, m.MountPath)
		}
		if strings.HasPrefix(m.MountPath, "/var/run/secrets") {
			t.Errorf("the sidecar mounts %s at %s", m.Name, m.MountPath)
		}
		sidecarVolumes[m.Name] = m.MountPath
	}
	var tokenMounted bool
	for _, m := range worker.VolumeMounts {
		v := volumes[m.Name]
		if m.MountPath == tokenDir && v.Projected != nil {
			tokenMounted = hasTokenSource(v.Projected)
		}
		if _, shared := sidecarVolumes[m.Name]; shared && m.Name != "plugin-socket" {
			t.Errorf("the worker shares %s with the sidecar", m.Name)
		}
	}
	if !tokenMounted {
		t.Error("the worker has no projected service account token at " + tokenDir)
	}
	var addr string
	for _, e := range worker.Env {
		if e.Name == "WINDLASS_PLUGIN_SERVER" {
			addr = e.Value
		}
	}
	sock, ok := strings.CutPrefix(addr, "unix://")
	if !ok || addr != listen || !strings.HasPrefix(sock, sidecarVolumes["plugin-socket"]+"/") {
		t.Errorf("worker's plugin server %q, sidecar listens on %q, socket volume at %q", addr, listen, sidecarVolumes["plugin-socket"])
	}
}

func hasTokenSource(p *corev1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.Path == "token" {
			return true
		}
	}
	return false
}
