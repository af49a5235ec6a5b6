package migrate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// Each bad input gets its own row with a reason that says what to fix;
// the good input next to it still migrates.
func TestRows(t *testing.T) {
	app := func(spec string) []unstructured.Unstructured {
		return []unstructured.Unstructured{obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n"+spec)}
	}
	secrets := func(s ...corev1.Secret) []corev1.Secret { return s }
	tests := []struct {
		name string
		src  Source
		// row is "KIND NAME ACTION", reason a part of its reason.
		row, reason string
	}{
		{name: "unknown secret type", src: Source{Secrets: secrets(secret("s", "gpg-key", nil))},
			row: "Secret s refuse", reason: `unknown secret-type "gpg-key"`},
		{name: "hydrator secret", src: Source{Secrets: secrets(secret("s", "repository-write", nil))},
			row: "Secret s refuse", reason: "not implemented yet: write credentials"},
		{name: "application that does not validate", src: Source{Applications: app("  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n  syncPolicy: {automated: {prune: maybe}}\n")},
			row: "Application a refuse", reason: "spec.syncPolicy.automated.prune"},
		{name: "application name taken in another project", src: Source{Applications: []unstructured.Unstructured{obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: taken}\nspec:\n  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n")}},
			row: "Application taken refuse", reason: "Windlass has an app taken in project other"},
		{name: "Kustomize version", src: Source{Applications: app("  project: default\n  source: {repoURL: https://g/x.git, path: x, kustomize: {version: v5.4.3}}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n")},
			row: "Application a create", reason: "spec.source.kustomize.version: ignored"},
		{name: "destination a cluster Secret does not name", src: Source{Applications: app("  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {name: nowhere, namespace: x}\n")},
			row: "Application a refuse", reason: "spec.destination.name"},
		{name: "destination named by its cluster Secret", src: Source{
			Applications: app("  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {name: edge, namespace: x}\n"),
			Secrets:      secrets(secret("c", typeCluster, map[string]string{"name": "edge", "server": "https://edge.example.com/"}))},
			row: "Application a create", reason: "destination edge is https://edge.example.com"},
		{name: "repository field unknown", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://g/x.git", "colour": "blue"}))},
			row: "Repository r refuse", reason: "field colour: unknown to the migration"},
		{name: "HTTPS repository without TLS verification", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://g/x.git", "insecure": "true"}))},
			row: "Repository r create", reason: "https://g/x.git"},
		{name: "repository with a proxy and a client certificate that does not parse", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://g/x.git",
			"proxy": "http://proxy:3128", "noProxy": ".internal", "tlsClientCertData": "not PEM", "tlsClientCertKey": "k-do-not-leak"}))},
			row: "Repository r refuse", reason: "tlsClientCertData and tlsClientCertKey are not a PEM certificate"},
		{name: "repository with a proxy", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://g/x.git", "proxy": "http://proxy:3128", "noProxy": ".internal"}))},
			row: "Repository r create", reason: "https://g/x.git"},
		{name: "repository of an unknown type", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://g/x.git", "type": "svn"}))},
			row: "Repository r refuse", reason: `field type: "svn" is not git, helm or oci`},
		{name: "SSH repository without host key check", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "git@g:x.git", "insecure": "true", "sshPrivateKey": "k"}))},
			row: "Repository r create", reason: "git@g:x.git"},
		{name: "repository with a GitHub App without its key", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://g/x.git", "githubAppID": "1", "githubAppInstallationID": "2"}))},
			row: "Repository r refuse", reason: "githubAppPrivateKey: a GitHub App needs its private key"},
		{name: "repository with a GitHub App ID that is not a number", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://g/x.git", "githubAppID": "one"}))},
			row: "Repository r refuse", reason: `field githubAppID: "one" is not a number`},
		{name: "repository with a password in its URL", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://u:pw@g/x.git"}))},
			row: "Repository r refuse", reason: "url holds a password"},
		{name: "Helm repository with credentials", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "https://charts", "type": "helm", "password": "p"}))},
			row: "Repository r create", reason: "https://charts"},
		{name: "Helm OCI registry", src: Source{Secrets: secrets(secret("r", typeRepository, map[string]string{"url": "registry.example.com/charts", "type": "helm", "enableOCI": "true", "password": "p"}))},
			row: "Repository r create", reason: "oci://registry.example.com/charts"},
		{name: "OCI credential template", src: Source{Secrets: secrets(secret("c", typeRepoCreds, map[string]string{"url": "oci://r/", "type": "oci", "password": "p"}))},
			row: "RepoCreds c create", reason: "credential template for oci://r/"},
		{name: "credential template for two spellings of one repository", src: Source{
			Applications: []unstructured.Unstructured{
				obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  project: default\n  source: {repoURL: https://g/team/x.git, path: x}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n"),
				obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: b}\nspec:\n  project: default\n  source: {repoURL: https://g/team/x, path: other}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n"),
			},
			Secrets: secrets(secret("c", typeRepoCreds, map[string]string{"url": "https://g/team/", "password": "p"}))},
			row: "RepoCreds c create", reason: "credential template for https://g/team/"},
		{name: "credential template with TLS and a proxy", src: Source{Secrets: secrets(secret("c", typeRepoCreds, map[string]string{"url": "https://g/", "insecure": "true", "proxy": "http://proxy:3128"}))},
			row: "RepoCreds c create", reason: "credential template for https://g/"},
		{name: "namespaced cluster", src: Source{Secrets: secrets(secret("c", typeCluster, map[string]string{"name": "x", "server": "https://x", "namespaces": "a,b"}))},
			row: "Cluster c refuse", reason: "field namespaces: not implemented yet"},
		{name: "cluster with exec auth", src: Source{Secrets: secrets(secret("c", typeCluster, map[string]string{"name": "x", "server": "https://x", "config": `{"execProviderConfig":{"command":"x"}}`}))},
			row: "Cluster c refuse", reason: "config.execProviderConfig: not implemented yet"},
		{name: "cluster config unknown field", src: Source{Secrets: secrets(secret("c", typeCluster, map[string]string{"name": "x", "server": "https://x", "config": `{"colour":"blue"}`}))},
			row: "Cluster c refuse", reason: `unknown field "colour"`},
		{name: "cluster name Windlass refuses", src: Source{Secrets: secrets(secret("c", typeCluster, map[string]string{"name": "Prod Cluster", "server": "https://x"}))},
			row: "Cluster c refuse", reason: "cluster name"},
		{name: "unknown tracking method", src: Source{Settings: map[string]string{keyTracking: "uid"}},
			row: "Setting argocd-cm application.resourceTrackingMethod refuse", reason: `unknown tracking method "uid"`},
		{name: "custom instance label with label tracking", src: Source{Settings: map[string]string{keyTracking: "label", keyInstanceLabel: "team/app"}},
			row: "Setting argocd-cm application.instanceLabelKey skip", reason: "every app gets windlass.dev/argocd-instance-label-key=team/app"},
		{name: "instance label that is not a label key", src: Source{Settings: map[string]string{keyTracking: "label", keyInstanceLabel: "team app"}},
			row: "Setting argocd-cm application.instanceLabelKey refuse", reason: `"team app" is not a label key`},
		{name: "installation ID", src: Source{Settings: map[string]string{keyInstallationID: "blue"}},
			row: "Setting argocd-cm installationID skip", reason: "every app gets windlass.dev/argocd-installation-id=blue"},
		{name: "apps in any namespace", src: Source{AppNamespaces: "team-*"},
			row: "Setting argocd-cmd-params-cm application.namespaces skip", reason: "namespaces matching team-* are read too"},
		{name: "two Applications of one name", src: Source{Applications: []unstructured.Unstructured{
			obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n"),
			obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: team-a}\nspec:\n  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n"),
		}}, row: "Application team-a/a refuse", reason: "the Application a is named a too"},
		{name: "account with an unknown capability", src: Source{Settings: map[string]string{"accounts.bot": "apiKey, exec"}},
			row: "Account bot refuse", reason: "capabilities apiKey, exec: want login and/or apiKey"},
		{name: "accounts alone", src: Source{Settings: map[string]string{"accounts.bot": "apiKey"}},
			row: "Setting argocd-cm accounts create", reason: "auth-config.yaml"},
		{name: "Kustomize build options", src: Source{Settings: map[string]string{"kustomize.buildOptions": "--enable-helm --load-restrictor=LoadRestrictionsNone"}},
			row: "Setting argocd-cm kustomize.buildOptions skip", reason: `start workers with --kustomize-build-options "--enable-helm --load-restrictor LoadRestrictionsNone"`},
		{name: "Kustomize build options that run programs", src: Source{Settings: map[string]string{"kustomize.buildOptions": "--enable-alpha-plugins --enable-exec"}},
			row: "Setting argocd-cm kustomize.buildOptions refuse", reason: "--enable-alpha-plugins is not supported: plugins would run programs"},
		{name: "resource inclusions", src: Source{Settings: map[string]string{"resource.inclusions": "- kinds: [Pod]"}},
			row: "Setting argocd-cm resource.inclusions create", reason: "run workers with --argocd-cm"},
		{name: "resource exclusions and inclusions", src: Source{Settings: map[string]string{"resource.inclusions": "- kinds: [Pod]", "resource.exclusions": "- kinds: [Secret]"}},
			row: "Setting argocd-cm resource.exclusions, resource.inclusions create", reason: "argocd-cm.yaml"},
		{name: "resource exclusions that do not parse", src: Source{Settings: map[string]string{"resource.exclusions": "- kind: [Secret]"}},
			row: "Setting argocd-cm resource.exclusions refuse", reason: `does not parse: resource.exclusions: error unmarshaling JSON: while decoding JSON: json: unknown field "kind"`},
		{name: "legacy customizations", src: Source{Settings: map[string]string{keyCustomizations: "apps/Deployment:\n  health.lua: 'return {status = \"Healthy\"}'\n"}},
			row: "HealthCheck apps/Deployment create", reason: "resource-customizations/apps/Deployment/health.lua"},
		{name: "actions", src: Source{Settings: map[string]string{prefixActions + "apps_Deployment": "discovery.lua: 'return {}'\ndefinitions:\n- name: bump\n  'action.lua': 'return obj'\n"}},
			row: "Action apps/Deployment bump/action.lua create", reason: "resource-customizations/apps/Deployment/actions/bump/action.lua"},
		{name: "actions discovery", src: Source{Settings: map[string]string{prefixActions + "apps_Deployment": "discovery.lua: 'return {}'\n"}},
			row: "Action apps/Deployment discovery.lua create", reason: "resource-customizations/apps/Deployment/actions/discovery.lua"},
		{name: "legacy actions", src: Source{Settings: map[string]string{keyCustomizations: "apps/Deployment:\n  actions: |\n    discovery.lua: 'return {}'\n"}},
			row: "Action apps/Deployment discovery.lua create", reason: "resource-customizations/apps/Deployment/actions/discovery.lua"},
		{name: "action that does not compile", src: Source{Settings: map[string]string{prefixActions + "apps_Deployment": "definitions:\n- name: bump\n  'action.lua': 'return {'\n"}},
			row: "Action apps/Deployment bump/action.lua refuse", reason: "does not compile"},
		{name: "actions that do not parse", src: Source{Settings: map[string]string{prefixActions + "apps_Deployment": "definitions:\n- name: bump\n"}},
			row: "Action apps/Deployment refuse", reason: "needs a name and an action.lua"},
		{name: "legacy ignoreDifferences as a map", src: Source{Settings: map[string]string{keyCustomizations: "apps/Deployment:\n  ignoreDifferences: {jsonPointers: [/spec/replicas]}\n"}},
			row: "IgnoreDifferences apps/Deployment skip", reason: "added to every migrated app"},
		{name: "ignoreDifferences that do not parse", src: Source{Settings: map[string]string{prefixIgnoreDiff + "apps_Deployment": "jsonPointer: /x"}},
			row: "IgnoreDifferences apps/Deployment refuse", reason: "does not parse"},
		{name: "RBAC Windlass refuses", src: Source{RBAC: map[string]string{"policy.csv": "p, role:x, applications, get, */*, perhaps\n"}},
			row: "RBAC argocd-rbac-cm refuse", reason: "Windlass's RBAC refuses it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			src.Namespace = "argocd"
			fake := newFake()
			fake.apps["other/taken"] = appspec.Application{Name: "taken", Project: "other"}
			plan, err := Build(t.Context(), &src, fake, Options{OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, r := range plan.Rows {
				row := r.Kind + " " + r.Name + " " + string(r.Action)
				if row == tc.row && strings.Contains(r.Reason, tc.reason) {
					return
				}
				all = append(all, row+": "+r.Reason)
			}
			t.Errorf("no row %q with reason %q; rows:\n%s", tc.row, tc.reason, strings.Join(all, "\n"))
		})
	}
}

// Argo CD's tracking settings become annotations on every migrated app
// that the app's spec accepts.
func TestTrackingAnnotations(t *testing.T) {
	src := Source{Namespace: "argocd",
		Settings: map[string]string{keyTracking: "annotation+label", keyInstanceLabel: "team/app", keyInstallationID: "blue"},
		Applications: []unstructured.Unstructured{
			obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n"),
		}}
	fake := newFake()
	plan, err := Build(t.Context(), &src, fake, Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	plan.Apply(t.Context(), fake)
	app, ok := fake.apps["default/a"]
	if !ok {
		t.Fatalf("app default/a not created; apps %v", fake.apps)
	}
	want := map[string]string{manifest.AppAnnotationArgoTracking: "annotation+label",
		manifest.AppAnnotationArgoInstanceLabelKey: "team/app", manifest.AppAnnotationArgoInstallationID: "blue"}
	if d := cmp.Diff(want, app.Annotations); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	if err := app.Defaulted().Validate(); err != nil {
		t.Errorf("the migrated app does not validate: %v", err)
	}
	tr, err := manifest.ArgoTrackingOf(app.Annotations, app.Name)
	if err != nil || tr.LabelKey != "team/app" || tr.InstallationID != "blue" || tr.App != "a" {
		t.Errorf("tracking = %+v, %v", tr, err)
	}
}

// An Application outside Argo CD's namespace keeps it as its
// sourceNamespace, and Argo CD's name for it in the tracking.
func TestAppOfAnotherNamespace(t *testing.T) {
	src := Source{Namespace: "argocd", AppNamespaces: "team-*", Applications: []unstructured.Unstructured{
		obj(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: team-a}\nspec:\n  project: default\n  source: {repoURL: https://g/x.git, path: x}\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n"),
	}}
	fake := newFake()
	plan, err := Build(t.Context(), &src, fake, Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	plan.Apply(t.Context(), fake)
	app, ok := fake.apps["default/web"]
	if !ok {
		t.Fatalf("app default/web not created; rows %+v", plan.Rows)
	}
	if app.SourceNamespace != "team-a" || app.Annotations[manifest.AppAnnotationArgoApp] != "team-a_web" {
		t.Errorf("sourceNamespace %q, annotations %v; want team-a and team-a_web", app.SourceNamespace, app.Annotations)
	}
	if err := app.Defaulted().Validate(); err != nil {
		t.Errorf("the migrated app does not validate: %v", err)
	}
}
