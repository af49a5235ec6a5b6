// Package deploy tests the installation assets: the Kustomize base and
// overlays under deploy/kubernetes (rendered with Windlass's own renderer
// and applied to the test bed's API server), the Helm chart under
// deploy/helm/windlass (rendered with the same renderer, compared with the
// Kustomize output object by object, its values checked by
// values.schema.json), the Dockerfile and docker-compose.yaml.
package deploy
