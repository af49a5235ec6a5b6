package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
)

const fieldManager = "windlass-deploy-test"

// isolate moves the objects into namespace ns and suffixes the names of
// cluster-scoped objects, so that the test shares the test bed with the
// others (which use the namespace windlass).
func isolate(objs []*unstructured.Unstructured, ns, suffix string) {
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
			o.SetName(ns)
		case "ClusterRole":
			o.SetName(o.GetName() + suffix)
		case "ClusterRoleBinding":
			o.SetName(o.GetName() + suffix)
			_ = unstructured.SetNestedField(o.Object, o.Object["roleRef"].(map[string]any)["name"].(string)+suffix, "roleRef", "name")
		}
		if o.GetNamespace() != "" {
			o.SetNamespace(ns)
		}
		if subjects, ok := o.Object["subjects"].([]any); ok {
			for _, s := range subjects {
				s.(map[string]any)["namespace"] = ns
			}
		}
		if o.GetKind() == "ConfigMap" && o.GetName() == "windlass-config" {
			_ = unstructured.SetNestedField(o.Object, ns, "data", "WINDLASS_MANAGEMENT_NAMESPACE")
		}
	}
}

// applier server-side applies objects to the test bed's API server.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T) *applier {
	cfg := bed.Cluster.Config
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dynamic.NewForConfigOrDie(cfg), mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

func (a *applier) client(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key(o), err)
	}
	if o.GetNamespace() != "" {
		return a.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

// apply server-side applies o, as a dry run or not.
func (a *applier) apply(ctx context.Context, o *unstructured.Unstructured, dryRun bool) error {
	rc, err := a.client(o)
	if err != nil {
		return err
	}
	body, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: &force, FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := rc.Patch(ctx, o.GetName(), types.ApplyPatchType, body, opts); err != nil {
		return fmt.Errorf("%s: %w", key(o), err)
	}
	return nil
}

func (a *applier) delete(o *unstructured.Unstructured) {
	if rc, err := a.client(o); err == nil {
		_ = rc.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
	}
}

// TestDevOverlayApplies sends every object of the dev overlay to the test
// bed's API server: a server-side dry run first (strict field validation),
// then a real server-side apply, and waits for the Deployments to become
// available (kwok's nodes run the pods nominally). The ha overlay's
// objects pass the dry run too.
func TestDevOverlayApplies(t *testing.T) {
	ctx := t.Context()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := "-" + hex.EncodeToString(b)
	ns := "windlass-deploy" + suffix
	a := newApplier(t)

	objs := kustomize(t, "overlays/dev")
	isolate(objs, ns, suffix)
	t.Cleanup(func() {
		for _, o := range objs {
			if o.GetNamespace() == "" {
				a.delete(o)
			}
		}
	})
	// The namespace first: a dry run of a namespaced object needs it.
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if err := a.apply(ctx, o, true); err != nil {
				t.Fatalf("dry run: %v", err)
			}
			if err := a.apply(ctx, o, false); err != nil {
				t.Fatal(err)
			}
			continue
		}
		rest = append(rest, o)
	}
	for _, o := range rest {
		if err := a.apply(ctx, o, true); err != nil {
			t.Errorf("dry run refused: %v", err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, o := range rest {
		if err := a.apply(ctx, o, false); err != nil {
			t.Errorf("apply refused: %v", err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("dev overlay: %d objects accepted by dry run and applied in %s", len(objs), ns)

	ha := kustomize(t, "overlays/ha")
	isolate(ha, ns, suffix)
	for _, o := range ha {
		if err := a.apply(ctx, o, true); err != nil {
			t.Errorf("ha dry run refused: %v", err)
		}
	}

	kc := kubernetes.NewForConfigOrDie(bed.Cluster.Config)
	deadline := time.Now().Add(2 * time.Minute)
	for _, name := range []string{"windlass-server", "windlass-worker", "windlass-temporal", "windlass-redis"} {
		for {
			d, err := kc.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.ObservedGeneration == d.Generation {
				break
			}
			if time.Now().After(deadline) {
				status := "not found"
				if err == nil {
					status = fmt.Sprintf("%d of %d available; conditions %v", d.Status.AvailableReplicas, *d.Spec.Replicas, d.Status.Conditions)
				}
				t.Fatalf("deployment %s not available: %s", name, status)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name+"="+string(p.Status.Phase))
	}
	t.Logf("pods: %s", strings.Join(names, " "))
}
