// Package manifest parses Kubernetes manifests (multi-document YAML and JSON,
// List kinds flattened, empty documents skipped) with limits that stop
// oversized input and YAML alias bombs, stamps and reads the Windlass
// tracking annotation, and orders objects for sync (wave, then kind, then
// name). It does no I/O.
package manifest
