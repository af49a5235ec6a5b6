package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Simulated container logs. kwok serves a pod's log (GET pods/log, which
// the API server proxies to the node) from a file that a kwok Logs or
// ClusterLogs object names. The cluster installs those kinds before kwok
// starts, and kwok watches them (--enable-crds).

// kwokLogKinds are the kwok kinds the cluster serves, as kwok's
// --enable-crds names them, with their plural and scope.
var kwokLogKinds = []struct {
	kind, plural string
	namespaced   bool
}{{"Logs", "logs", true}, {"ClusterLogs", "clusterlogs", false}}

const kwokGroup = "kwok.x-k8s.io"

var gvrClusterLogs = schema.GroupVersionResource{Group: kwokGroup, Version: "v1alpha1", Resource: "clusterlogs"}

// kwokCRD is a CustomResourceDefinition of a kwok kind whose schema
// leaves the fields to kwok.
func kwokCRD(kind, plural string, namespaced bool) *unstructured.Unstructured {
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + kwokGroup},
		"spec": map[string]any{
			"group": kwokGroup, "scope": scope,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
}

// installKwokCRDs installs the kwok log kinds and waits until they are
// established.
func installKwokCRDs(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, k := range kwokLogKinds {
		u := kwokCRD(k.kind, k.plural, k.namespaced)
		if _, err := dyn.Resource(crds).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "windlass-testbed", Force: true}); err != nil {
			return fmt.Errorf("apply CRD %s: %w", u.GetName(), err)
		}
		if err := established(ctx, dyn, u.GetName()); err != nil {
			return err
		}
	}
	return nil
}

// kwokCRDFlag is kwok's flag that makes it watch the log kinds.
func kwokCRDFlag() string {
	names := make([]string, len(kwokLogKinds))
	for i, k := range kwokLogKinds {
		names[i] = k.kind
	}
	return "--enable-crds=" + strings.Join(names, ",")
}

// ErrNoPodLogs says the cluster was started without simulated logs (by an
// older test bed): restart it.
var ErrNoPodLogs = errors.New("the test cluster serves no kwok ClusterLogs: restart it with this test bed")

// SimulatePodLogs makes kwok serve logsFile as the log of every container
// of the pods in namespace, and previousFile (if not empty) as their
// previous instance's. Write the files with AppendCRILog; kwok reads them
// on each request and follows them. The returned cleanup removes the
// ClusterLogs object.
func SimulatePodLogs(ctx context.Context, cfg *rest.Config, namespace, logsFile, previousFile string) (func(), error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	log := map[string]any{"logsFile": logsFile, "follow": true}
	if previousFile != "" {
		log["previousLogsFile"] = previousFile
	}
	name := "windlass-test-" + namespace
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kwokGroup + "/v1alpha1", "kind": "ClusterLogs",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"selector": map[string]any{"matchNamespaces": []any{namespace}},
			"logs":     []any{log},
		},
	}}
	if _, err := dyn.Resource(gvrClusterLogs).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ErrNoPodLogs
		}
		return nil, fmt.Errorf("create ClusterLogs %s: %w", name, err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = dyn.Resource(gvrClusterLogs).Delete(ctx, name, metav1.DeleteOptions{})
	}, nil
}

// AppendCRILog appends lines to a container log file in the CRI format
// that kwok reads (one stdout line each, stamped now).
func AppendCRILog(path string, lines ...string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), l)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
