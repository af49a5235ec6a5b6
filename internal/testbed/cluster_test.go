package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// eventually polls cond every 100 ms until it reports true, fails the test
// with cond's last error after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil && ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		case <-tick.C:
		}
	}
}

func TestStartClusterMissingBinaries(t *testing.T) {
	_, err := StartCluster(t.Context(), ClusterOptions{BinDir: t.TempDir(), Dir: t.TempDir()})
	if err == nil {
		t.Fatal("StartCluster succeeded without binaries")
	}
	for _, want := range []string{"make testbed", "kube-apiserver", "kwok-stages.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	dir := t.TempDir()
	begin := time.Now()
	c, err := StartCluster(t.Context(), ClusterOptions{
		Dir: dir,
		Log: func(msg string, args ...any) { t.Log(append([]any{msg}, args...)...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("StartCluster took %s", time.Since(begin).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := c.Stop(); err != nil {
				t.Error(err)
			}
		}
	})
	if c.Dir != dir || c.Kubeconfig != filepath.Join(dir, "admin.kubeconfig") {
		t.Errorf("Dir %q Kubeconfig %q", c.Dir, c.Kubeconfig)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Errorf("%d nodes, want 2", len(nodes.Items))
	}
	const ns = "testbed"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "default ServiceAccount in "+ns, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})

	t.Run("deployment becomes Available", func(t *testing.T) {
		labels := map[string]string{"app": "web"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
				},
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "deployment web Available", func(ctx context.Context) (bool, error) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range d.Status.Conditions {
				if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
					return d.Status.AvailableReplicas == 1, fmt.Errorf("available replicas %d", d.Status.AvailableReplicas)
				}
			}
			return false, fmt.Errorf("conditions %v", d.Status.Conditions)
		})
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 {
			t.Fatalf("%d pods, want 1", len(pods.Items))
		}
		if node := pods.Items[0].Spec.NodeName; !strings.HasPrefix(node, "kwok-node-") {
			t.Errorf("pod scheduled to %q, want a kwok node", node)
		}
	})

	t.Run("pod logs", func(t *testing.T) {
		dir := t.TempDir()
		cur, prev := filepath.Join(dir, "current.log"), filepath.Join(dir, "previous.log")
		if err := AppendCRILog(cur, "one", "two"); err != nil {
			t.Fatal(err)
		}
		if err := AppendCRILog(prev, "before"); err != nil {
			t.Fatal(err)
		}
		cleanup, err := SimulatePodLogs(ctx, c.Config, ns, cur, prev)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cleanup)
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("pods of web: %v", err)
		}
		pod := pods.Items[0].Name
		read := func(ctx context.Context, o corev1.PodLogOptions) (string, error) {
			b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &o).DoRaw(ctx)
			return string(b), err
		}
		// kwok picks the ClusterLogs up from its watch.
		eventually(t, 30*time.Second, "logs of "+pod, func(ctx context.Context) (bool, error) {
			got, err := read(ctx, corev1.PodLogOptions{})
			return got == "one\ntwo\n", fmt.Errorf("logs %q: %v", got, err)
		})
		if got, err := read(ctx, corev1.PodLogOptions{TailLines: new(int64(1))}); err != nil || got != "two\n" {
			t.Errorf("tail 1: %q, %v", got, err)
		}
		if got, err := read(ctx, corev1.PodLogOptions{Previous: true}); err != nil || got != "before\n" {
			t.Errorf("previous: %q, %v", got, err)
		}
	})

	t.Run("job completes", func(t *testing.T) {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: ns},
			Spec: batchv1.JobSpec{
				BackoffLimit: new(int32(0)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "migrate", Image: "busybox:1.36", Command: []string{"true"}}},
				}},
			},
		}
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "job migrate Complete", func(ctx context.Context) (bool, error) {
			j, err := cs.BatchV1().Jobs(ns).Get(ctx, "migrate", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range j.Status.Conditions {
				if cond.Status != corev1.ConditionTrue {
					continue
				}
				switch cond.Type {
				case batchv1.JobComplete:
					return true, nil
				case batchv1.JobFailed:
					t.Fatalf("job failed: %s", cond.Message)
				}
			}
			return false, fmt.Errorf("conditions %v", j.Status.Conditions)
		})
	})

	t.Run("server-side apply dry run", func(t *testing.T) {
		dryRun := metav1.ApplyOptions{FieldManager: "windlass-test", DryRun: []string{metav1.DryRunAll}}
		tests := []struct {
			name  string
			apply func(context.Context) error
			check func(t *testing.T, err error)
		}{
			{
				name: "new object is not persisted",
				apply: func(ctx context.Context) error {
					cm := corev1ac.ConfigMap("settings", ns).WithData(map[string]string{"greeting": "hello"})
					got, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, cm, dryRun)
					if err == nil && got.Data["greeting"] != "hello" {
						return fmt.Errorf("dry-run result data %v", got.Data)
					}
					return err
				},
				check: func(t *testing.T, err error) {
					if err != nil {
						t.Fatal(err)
					}
					_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
					if !apierrors.IsNotFound(err) {
						t.Errorf("get after dry run: %v, want NotFound", err)
					}
				},
			},
			{
				name: "conflict with another field manager",
				apply: func(ctx context.Context) error {
					d := appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
					_, err := cs.AppsV1().Deployments(ns).Apply(ctx, d, dryRun)
					return err
				},
				check: func(t *testing.T, err error) {
					if !apierrors.IsConflict(err) {
						t.Errorf("apply error %v, want a field-manager conflict", err)
					}
				},
			},
			{
				name: "forced change is returned but not stored",
				apply: func(ctx context.Context) error {
					d := appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
					opts := dryRun
					opts.Force = true
					got, err := cs.AppsV1().Deployments(ns).Apply(ctx, d, opts)
					if err == nil && (got.Spec.Replicas == nil || *got.Spec.Replicas != 3) {
						return fmt.Errorf("dry-run result replicas %v, want 3", got.Spec.Replicas)
					}
					return err
				},
				check: func(t *testing.T, err error) {
					if err != nil {
						t.Fatal(err)
					}
					stored, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if *stored.Spec.Replicas != 1 {
						t.Errorf("stored replicas %d, want 1", *stored.Spec.Replicas)
					}
				},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tt.check(t, tt.apply(t.Context()))
			})
		}
	})

	t.Run("LoadCluster and Shared attach to it", func(t *testing.T) {
		loaded, err := LoadCluster(dir)
		if err != nil {
			t.Fatal(err)
		}
		if loaded.Config.Host != c.Config.Host {
			t.Errorf("loaded host %q, want %q", loaded.Config.Host, c.Config.Host)
		}
		t.Setenv(EnvClusterDir, dir)
		t.Setenv(EnvRedisAddr, "127.0.0.1:6390")
		env, cleanup, err := Shared(t.Context(), "testbed")
		if err != nil {
			t.Fatal(err)
		}
		cleanup()
		if env.Cluster.Dir != dir || env.RedisAddr != "127.0.0.1:6390" {
			t.Errorf("env %+v", env)
		}
		if _, err := LoadCluster(dir); err != nil {
			t.Errorf("cluster gone after Shared's cleanup: %v", err)
		}
	})

	t.Run("private Shared bed next to it", func(t *testing.T) {
		t.Setenv(EnvClusterDir, "")
		t.Setenv(EnvRedisAddr, "")
		begin := time.Now()
		env, cleanup, err := Shared(t.Context(), "testbed")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("second cluster and Redis up in %s", time.Since(begin).Round(time.Millisecond))
		privDir := env.Cluster.Dir
		if env.Cluster.Config.Host == c.Config.Host {
			t.Errorf("both clusters at %s", c.Config.Host)
		}
		cs2, err := kubernetes.NewForConfig(env.Cluster.Config)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs2.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s in the private cluster: %v, want NotFound", ns, err)
		}
		if env.RedisAddr == "" {
			t.Error("no Redis address")
		}
		cleanup()
		if _, err := os.Stat(privDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("private cluster dir left behind: %v", err)
		}
		if _, err := LoadCluster(dir); err != nil {
			t.Errorf("first cluster harmed: %v", err)
		}
	})

	t.Run("Stop", func(t *testing.T) {
		entries, err := readPids(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(componentNames) {
			t.Errorf("%d pids recorded, want %d", len(entries), len(componentNames))
		}
		procs, err := Processes(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(procs) != len(entries) {
			t.Errorf("Processes: %d, want the %d recorded", len(procs), len(entries))
		}
		for i, p := range procs {
			if i < len(entries) && (p.Name != entries[i].name || p.PID != entries[i].pid) {
				t.Errorf("Processes[%d] = %+v, want %s %d", i, p, entries[i].name, entries[i].pid)
			}
		}
		stopped = true
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if running(e.name, e.pid) {
				t.Errorf("%s (pid %d) still running", e.name, e.pid)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, pidsFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pids file after Stop: %v", err)
		}
		if _, err := LoadCluster(dir); err == nil {
			t.Error("LoadCluster succeeded on a stopped cluster")
		}
		if procs, err := Processes(dir); err != nil || len(procs) != 0 {
			t.Errorf("Processes after Stop = %v, %v; want none", procs, err)
		}
	})
}
