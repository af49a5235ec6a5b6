package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs applies the CustomResourceDefinitions in files (paths
// relative to the repository root, one CRD a file, such as
// deploy/crds/applications.yaml) with server-side apply, and waits until
// each is established. CRDs are cluster-wide: tests that share a cluster
// install the same files and never delete them.
func InstallCRDs(ctx context.Context, cfg *rest.Config, files ...string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := dyn.Resource(crds).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "windlass-testbed", Force: true}); err != nil {
			return fmt.Errorf("apply %s: %w", f, err)
		}
		if err := established(ctx, dyn, u.GetName()); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// established waits for the CRD's Established condition.
func established(ctx context.Context, dyn dynamic.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		u, err := dyn.Resource(crds).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
