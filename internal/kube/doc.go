// Package kube builds Kubernetes clients for destination clusters. For now
// one cluster is configured (the kubeconfig Windlass runs with); it answers
// to the destination server "https://kubernetes.default.svc", "in-cluster"
// and its own API server URL. Other servers are refused with
// ErrUnknownCluster until cluster registration lands.
package kube
