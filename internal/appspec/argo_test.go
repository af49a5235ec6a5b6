package appspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/argo")

// golden compares got with the golden file, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "argo", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "argo", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseGolden(t *testing.T) {
	tests := []struct {
		input, golden string
		project       bool
	}{
		{input: "guestbook.yaml", golden: "guestbook.golden.json"},
		{input: "guestbook.json", golden: "guestbook.golden.json"},
		{input: "helm.yaml", golden: "helm.golden.json"},
		{input: "kustomize.yaml", golden: "kustomize.golden.json"},
		{input: "multi-source.yaml", golden: "multi-source.golden.json"},
		{input: "jsonnet.yaml", golden: "jsonnet.golden.json"},
		{input: "windlass.yaml", golden: "windlass.golden.json"},
		{input: "appproject.yaml", golden: "appproject.golden.json", project: true},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			data := readFixture(t, tt.input)
			var (
				got any
				err error
			)
			if tt.project {
				got, err = ParseProject(data)
			} else {
				got, err = ParseApplication(data)
			}
			if err != nil {
				t.Fatalf("parse %s: %v", tt.input, err)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, append(out, '\n'))
		})
	}
}

// fixtureObject reads a fixture into a JSON object to edit.
func fixtureObject(t *testing.T, name string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(readFixture(t, name), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// set sets the field at a dotted path, creating the objects on the way.
func set(obj map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	obj[keys[len(keys)-1]] = v
}

// get returns the object at a dotted path.
func get(obj map[string]any, path string) map[string]any {
	for k := range strings.SplitSeq(path, ".") {
		obj = obj[k].(map[string]any)
	}
	return obj
}

func marshal(t *testing.T, obj map[string]any) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantFieldError checks that err is a *FieldError on field whose reason
// contains reason.
func wantFieldError(t *testing.T, err error, field, reason string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v, want a *FieldError on %s", err, field)
	}
	if fe.Field != field || !strings.Contains(fe.Reason, reason) {
		t.Fatalf("error = %q, want field %s with a reason containing %q", err, field, reason)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %v does not match ErrInvalid", err)
	}
}

func TestParseApplicationRejects(t *testing.T) {
	helmSource := func(helm map[string]any) map[string]any {
		return map[string]any{"repoURL": "https://charts.example.com", "chart": "web", "helm": helm}
	}
	tests := []rejectCase{
		{
			name:  "helm passCredentials",
			edit:  func(o map[string]any) { set(o, "spec.source.helm.passCredentials", true) },
			field: "spec.source.helm.passCredentials", reason: notSupported,
		},
		{
			name:  "helm version v2",
			edit:  func(o map[string]any) { set(o, "spec.source.helm.version", "v2") },
			field: "spec.source.helm.version", reason: `"v2" is not supported by Windlass; only v3 is`,
		},
		{
			name: "helm version of the second source",
			edit: func(o map[string]any) {
				src := get(o, "spec")["source"]
				delete(get(o, "spec"), "source")
				set(o, "spec.sources", []any{src, helmSource(map[string]any{"version": "3"})})
			},
			field: "spec.sources[1].helm.version", reason: `"3" is not supported`,
		},
		{
			name: "unsupported field of the second source",
			edit: func(o map[string]any) {
				src := get(o, "spec")["source"]
				delete(get(o, "spec"), "source")
				set(o, "spec.sources", []any{src, helmSource(map[string]any{"passCredentials": true})})
			},
			field: "spec.sources[1].helm.passCredentials", reason: notSupported,
		},
		{
			name:  "Windlass-only field in an Argo CD document",
			edit:  func(o map[string]any) { set(o, "spec.source.kustomize.allowRemoteBases", true) },
			field: "spec.source.kustomize.allowRemoteBases", reason: "unknown field",
		},
		{
			name: "kustomize replica count not a number",
			edit: func(o map[string]any) {
				set(o, "spec.source.kustomize.replicas", []any{map[string]any{"name": "web", "count": "two"}})
			},
			field: "spec.source.kustomize.replicas[0].count", reason: "integer",
		},
		{
			name: "source and sources together",
			edit: func(o map[string]any) {
				set(o, "spec.sources", []any{map[string]any{"repoURL": "https://git.example.com/a.git"}})
			},
			field: "spec.source", reason: "spec.sources",
		},
		{
			name:  "destination name beside a server",
			edit:  func(o map[string]any) { set(o, "spec.destination.name", "prod-eu") },
			field: "spec.destination", reason: "both server",
		},
		{
			name: "destination in-cluster beside another server",
			edit: func(o map[string]any) {
				set(o, "spec.destination.name", "in-cluster")
				set(o, "spec.destination.server", "https://prod.example.com")
			},
			field: "spec.destination", reason: "both server",
		},
		{
			name: "destination name not a cluster name",
			edit: func(o map[string]any) {
				delete(get(o, "spec.destination"), "server")
				set(o, "spec.destination.name", "Prod_EU")
			},
			field: "spec.destination.name", reason: "DNS label",
		},
		{
			name: "info without a name",
			edit: func(o map[string]any) {
				set(o, "spec.info", []any{map[string]any{"value": "https://docs"}})
			},
			field: "spec.info[0].name", reason: "is required",
		},
		{
			name:  "info not a list",
			edit:  func(o map[string]any) { set(o, "spec.info", map[string]any{"Docs": "https://docs"}) },
			field: "spec.info", reason: "must be a list",
		},
		{
			name:  "revisionHistoryLimit negative",
			edit:  func(o map[string]any) { set(o, "spec.revisionHistoryLimit", -1) },
			field: "spec.revisionHistoryLimit", reason: "between 0 and 100",
		},
		{
			name:  "revisionHistoryLimit too large",
			edit:  func(o map[string]any) { set(o, "spec.revisionHistoryLimit", 1000) },
			field: "spec.revisionHistoryLimit", reason: "between 0 and 100",
		},
		{
			name:  "revisionHistoryLimit not a number",
			edit:  func(o map[string]any) { set(o, "spec.revisionHistoryLimit", "ten") },
			field: "spec.revisionHistoryLimit", reason: "must be an integer",
		},
		{
			name: "sourceHydrator",
			edit: func(o map[string]any) {
				set(o, "spec.sourceHydrator.drySource.repoURL", "https://git.example.com/a.git")
			},
			field: "spec.sourceHydrator", reason: notSupported,
		},
		{
			name:  "retry refresh not a boolean",
			edit:  func(o map[string]any) { set(o, "spec.syncPolicy.retry.refresh", "yes") },
			field: "spec.syncPolicy.retry.refresh", reason: "true or false",
		},
		{
			name:  "backoff factor zero",
			edit:  func(o map[string]any) { set(o, "spec.syncPolicy.retry.backoff.factor", 0) },
			field: "spec.syncPolicy.retry.backoff.factor", reason: notSupported,
		},
		{
			name: "settings of a disabled automated sync",
			edit: func(o map[string]any) {
				set(o, "spec.syncPolicy.automated", map[string]any{"enabled": false, "prune": true})
			},
			field: "spec.syncPolicy.automated.enabled", reason: "disabled",
		},
		{
			name:  "operation",
			edit:  func(o map[string]any) { set(o, "operation.sync.revision", "HEAD") },
			field: "operation", reason: notSupported,
		},
		{
			name:  "label value with a space",
			edit:  func(o map[string]any) { set(o, "metadata.labels", map[string]any{"team": "a b"}) },
			field: "metadata.labels.team", reason: "valid label",
		},
		{
			name:  "annotation key with a space",
			edit:  func(o map[string]any) { set(o, "metadata.annotations", map[string]any{"a b": "x"}) },
			field: "metadata.annotations", reason: `"a b"`,
		},
		{
			name:  "foreign finalizer",
			edit:  func(o map[string]any) { set(o, "metadata.finalizers", []any{argoFinalizer, "example.com/cleanup"}) },
			field: "metadata.finalizers[1]", reason: "example.com/cleanup",
		},
		{
			name:  "generateName",
			edit:  func(o map[string]any) { set(o, "metadata.generateName", "guestbook-") },
			field: "metadata.generateName", reason: "metadata.name",
		},
		{
			name: "ownerReferences",
			edit: func(o map[string]any) {
				set(o, "metadata.ownerReferences", []any{map[string]any{"kind": "ApplicationSet"}})
			},
			field: "metadata.ownerReferences", reason: notSupported,
		},
		{
			name:  "unknown field",
			edit:  func(o map[string]any) { set(o, "spec.source.helm.valueFile", "x.yaml") },
			field: "spec.source.helm.valueFile", reason: "unknown field",
		},
		{
			name:  "unknown top-level field",
			edit:  func(o map[string]any) { set(o, "specs", map[string]any{}) },
			field: "specs", reason: "unknown field",
		},
		{
			name:  "wrong type",
			edit:  func(o map[string]any) { set(o, "spec.source.path", 3) },
			field: "spec.source.path", reason: "must be a string",
		},
		{
			name:  "wrong type in a map",
			edit:  func(o map[string]any) { set(o, "spec.source.kustomize.commonLabels", map[string]any{"tier": 1}) },
			field: `spec.source.kustomize.commonLabels["tier"]`, reason: "must be a string",
		},
		{
			name:  "wrong type in a list",
			edit:  func(o map[string]any) { set(o, "spec.syncPolicy.syncOptions", []any{"CreateNamespace=true", true}) },
			field: "spec.syncPolicy.syncOptions[1]", reason: "must be a string",
		},
		{
			name:  "missing name",
			edit:  func(o map[string]any) { delete(get(o, "metadata"), "name") },
			field: "metadata.name", reason: "is required",
		},
		{
			name:  "bad project",
			edit:  func(o map[string]any) { set(o, "spec.project", "Team_A") },
			field: "spec.project", reason: "DNS label",
		},
		{
			name:  "path traversal",
			edit:  func(o map[string]any) { set(o, "spec.source.path", "../../etc") },
			field: "spec.source.path", reason: "leave the repository",
		},
		{
			name:  "bad apiVersion",
			edit:  func(o map[string]any) { o["apiVersion"] = "argoproj.io/v1beta1" },
			field: "apiVersion", reason: argoAPIVersion,
		},
		{
			name:  "kind without apiVersion",
			edit:  func(o map[string]any) { delete(o, "apiVersion") },
			field: "apiVersion", reason: "is required",
		},
		{
			name:  "apiVersion without kind",
			edit:  func(o map[string]any) { delete(o, "kind") },
			field: "kind", reason: "is required",
		},
		{
			name:  "a project given as an application",
			edit:  func(o map[string]any) { o["kind"] = "AppProject" },
			field: "kind", reason: `"AppProject"; want Application`,
		},
		{
			name:  "an ApplicationSet",
			edit:  func(o map[string]any) { o["kind"] = "ApplicationSet" },
			field: "kind", reason: "ApplicationSet",
		},
	}
	runRejects(t, "guestbook.yaml", parseApp, tests)
}

// rejectCase edits a fixture so that parsing it fails on field.
type rejectCase struct {
	name   string
	edit   func(obj map[string]any)
	field  string
	reason string
}

func runRejects(t *testing.T, fixture string, parse func([]byte) (any, error), tests []rejectCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fixtureObject(t, fixture)
			tt.edit(obj)
			got, err := parse(marshal(t, obj))
			wantFieldError(t, err, tt.field, tt.reason)
			if !reflect.ValueOf(got).IsZero() {
				t.Errorf("an error came with a value: %+v", got)
			}
		})
	}
}

func TestParseApplicationAccepts(t *testing.T) {
	base, err := ParseApplication(readFixture(t, "guestbook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(obj map[string]any)
		want func(app *Application)
	}{
		{
			name: "empty values of unsupported fields",
			edit: func(o map[string]any) {
				set(o, "spec.source.helm", map[string]any{"passCredentials": false, "version": ""})
				set(o, "spec.info", []any{})
				set(o, "metadata.labels", map[string]any{})
				set(o, "status.sync.status", "Synced")
			},
			want: func(a *Application) { a.Source.Helm = &Helm{} },
		},
		{
			name: "labels and annotations, without last-applied-configuration",
			edit: func(o map[string]any) {
				set(o, "metadata.labels", map[string]any{"team": "payments"})
				set(o, "metadata.annotations", map[string]any{lastApplied: "{}",
					"notifications.argoproj.io/subscribe.on-sync-succeeded.slack": "ops"})
			},
			want: func(a *Application) {
				a.Labels = map[string]string{"team": "payments"}
				a.Annotations = map[string]string{"notifications.argoproj.io/subscribe.on-sync-succeeded.slack": "ops"}
			},
		},
		{
			name: "info",
			edit: func(o map[string]any) {
				set(o, "spec.info", []any{
					map[string]any{"name": "Runbook", "value": "https://wiki.example.com/guestbook"},
					map[string]any{"name": "Owner", "value": ""},
				})
			},
			want: func(a *Application) {
				a.Info = []InfoItem{{Name: "Runbook", Value: "https://wiki.example.com/guestbook"}, {Name: "Owner"}}
			},
		},
		{
			name: "helm version v3, skipSchemaValidation and capabilities",
			edit: func(o map[string]any) {
				set(o, "spec.source.helm", map[string]any{"version": "v3", "skipSchemaValidation": true,
					"kubeVersion": "1.31.0", "apiVersions": []any{"monitoring.coreos.com/v1"}})
			},
			want: func(a *Application) {
				a.Source.Helm = &Helm{SkipSchemaValidation: true, KubeVersion: "1.31.0", APIVersions: []string{"monitoring.coreos.com/v1"}}
			},
		},
		{
			name: "kustomize version, kubeVersion and apiVersions",
			edit: func(o map[string]any) {
				set(o, "spec.source.kustomize", map[string]any{"namePrefix": "p-", "version": "v5.4.3",
					"kubeVersion": "1.31", "apiVersions": []any{"v1/Pod"}})
			},
			want: func(a *Application) { a.Source.Kustomize = &Kustomize{NamePrefix: "p-"} },
		},
		{
			name: "retry refresh",
			edit: func(o map[string]any) {
				set(o, "spec.syncPolicy", map[string]any{"retry": map[string]any{"limit": 2, "refresh": true}})
			},
			want: func(a *Application) { a.SyncPolicy = &SyncPolicy{Retry: &RetryStrategy{Limit: 2, Refresh: true}} },
		},
		{
			name: "revisionHistoryLimit",
			edit: func(o map[string]any) { set(o, "spec.revisionHistoryLimit", 0) },
			want: func(a *Application) { a.RevisionHistoryLimit = new(int) },
		},
		{
			name: "metadata.namespace outside Argo CD's own",
			edit: func(o map[string]any) { set(o, "metadata.namespace", "team-a-apps") },
			want: func(a *Application) { a.SourceNamespace = "team-a-apps" },
		},
		{
			name: "destination name",
			edit: func(o map[string]any) {
				delete(get(o, "spec.destination"), "server")
				set(o, "spec.destination.name", "prod-eu")
			},
			want: func(a *Application) { a.Destination = Destination{Name: "prod-eu", Namespace: a.Destination.Namespace} },
		},
		{
			name: "destination name in-cluster",
			edit: func(o map[string]any) {
				delete(get(o, "spec.destination"), "server")
				set(o, "spec.destination.name", "in-cluster")
			},
		},
		{
			name: "automated sync enabled",
			edit: func(o map[string]any) {
				set(o, "spec.syncPolicy.automated", map[string]any{"enabled": true, "prune": true})
			},
			want: func(a *Application) { a.SyncPolicy = &SyncPolicy{Automated: &Automated{Prune: true}} },
		},
		{
			name: "automated sync disabled",
			edit: func(o map[string]any) { set(o, "spec.syncPolicy.automated", map[string]any{"enabled": false}) },
			want: func(a *Application) { a.SyncPolicy = &SyncPolicy{} },
		},
		{
			name: "empty jsonnet options select the directory tool",
			edit: func(o map[string]any) {
				set(o, "spec.source.directory", map[string]any{"recurse": true, "jsonnet": map[string]any{}})
			},
			want: func(a *Application) { a.Source.Directory = &Directory{Recurse: true} },
		},
		{
			name: "nulls are absent",
			edit: func(o map[string]any) {
				set(o, "spec.syncPolicy", nil)
				set(o, "spec.source.helm", nil)
				set(o, "operation", nil)
			},
		},
		{
			name: "plugin",
			edit: func(o map[string]any) {
				set(o, "spec.source.plugin", map[string]any{
					"name": "cdk8s", "env": []any{map[string]any{"name": "STAGE", "value": "prod"}},
					"parameters": []any{map[string]any{"name": "regions", "array": []any{"eu", "us"}}},
				})
			},
			want: func(a *Application) {
				a.Source.Plugin = &Plugin{Name: "cdk8s", Env: []EnvVar{{Name: "STAGE", Value: "prod"}},
					Parameters: []PluginParameter{{Name: "regions", Array: []string{"eu", "us"}}}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fixtureObject(t, "guestbook.yaml")
			tt.edit(obj)
			got, err := ParseApplication(marshal(t, obj))
			if err != nil {
				t.Fatalf("ParseApplication() = %v", err)
			}
			want := base
			if tt.want != nil {
				tt.want(&want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseApplication() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProjectRejects(t *testing.T) {
	tests := []rejectCase{
		{
			name: "role with JWT tokens",
			edit: func(o map[string]any) {
				role := get(o, "spec")["roles"].([]any)[0].(map[string]any)
				role["jwtTokens"] = []any{map[string]any{"iat": 1767600000, "id": "5d2c1e7a"}}
			},
			field: "spec.roles[0].jwtTokens", reason: "mints its own tokens",
		},
		{
			name:  "orphanedResources ignore without a list",
			edit:  func(o map[string]any) { set(o, "spec.orphanedResources.ignore", "ConfigMap") },
			field: "spec.orphanedResources.ignore", reason: "must be a list",
		},
		{
			name: "signatureKeys not a key ID",
			edit: func(o map[string]any) {
				set(o, "spec.signatureKeys", []any{map[string]any{"keyID": "4AEE18F8"}})
			},
			field: "spec.signatureKeys[0].keyID", reason: "not a long GPG key ID",
		},
		{
			name:  "sourceNamespaces not a list",
			edit:  func(o map[string]any) { set(o, "spec.sourceNamespaces", "team-a") },
			field: "spec.sourceNamespaces", reason: "must be a list",
		},
		{
			name: "destinationServiceAccounts without a service account",
			edit: func(o map[string]any) {
				set(o, "spec.destinationServiceAccounts", []any{map[string]any{"server": "*", "namespace": "*"}})
			},
			field: "spec.destinationServiceAccounts[0].defaultServiceAccount", reason: "is required",
		},
		{
			name: "destinationServiceAccounts with a bad service account",
			edit: func(o map[string]any) {
				set(o, "spec.destinationServiceAccounts", []any{map[string]any{"server": "*", "namespace": "*", "defaultServiceAccount": "Team A:deployer"}})
			},
			field: "spec.destinationServiceAccounts[0].defaultServiceAccount", reason: "not a service account name",
		},
		{
			name:  "permitOnlyProjectScopedClusters",
			edit:  func(o map[string]any) { set(o, "spec.permitOnlyProjectScopedClusters", true) },
			field: "spec.permitOnlyProjectScopedClusters", reason: "registered clusters belong to no project",
		},
		{
			name: "cluster resource by name",
			edit: func(o map[string]any) {
				get(o, "spec")["clusterResourceWhitelist"].([]any)[0].(map[string]any)["name"] = "team-a-*"
			},
			field: "spec.clusterResourceWhitelist[0].name", reason: "kinds, not objects",
		},
		{
			name: "role name Windlass does not accept",
			edit: func(o map[string]any) {
				get(o, "spec")["roles"].([]any)[0].(map[string]any)["name"] = "CI_bot"
			},
			field: "spec.roles[0].name", reason: "DNS label",
		},
		{
			name: "bad sync window",
			edit: func(o map[string]any) {
				get(o, "spec")["syncWindows"].([]any)[0].(map[string]any)["schedule"] = "at noon"
			},
			field: "spec.syncWindows[0]", reason: "schedule",
		},
		{
			name:  "missing name",
			edit:  func(o map[string]any) { delete(get(o, "metadata"), "name") },
			field: "metadata.name", reason: "is required",
		},
		{
			name:  "label key with two slashes",
			edit:  func(o map[string]any) { set(o, "metadata.labels", map[string]any{"a/b/c": "gold"}) },
			field: "metadata.labels", reason: `"a/b/c"`,
		},
		{
			name:  "an application given as a project",
			edit:  func(o map[string]any) { o["kind"] = "Application" },
			field: "kind", reason: `"Application"; want AppProject`,
		},
	}
	runRejects(t, "appproject.yaml", parseProject, tests)
}

func TestParseProjectAccepts(t *testing.T) {
	base, err := ParseProject(readFixture(t, "appproject.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	window := func(o map[string]any, i int) map[string]any {
		return get(o, "spec")["syncWindows"].([]any)[i].(map[string]any)
	}
	tests := []struct {
		name string
		edit func(obj map[string]any)
		want func(p *Project)
	}{
		{
			name: "sync window andOperator",
			edit: func(o map[string]any) { window(o, 1)["andOperator"] = true },
			want: func(p *Project) { p.SyncWindows[1].AndOperator = true },
		},
		{
			name: "sync window description",
			edit: func(o map[string]any) { window(o, 0)["description"] = "CHG-1234" },
			want: func(p *Project) { p.SyncWindows[0].Description = "CHG-1234" },
		},
		{
			name: "deny pattern in sourceRepos",
			edit: func(o map[string]any) { set(o, "spec.sourceRepos", []any{"*", "!https://git.example.com/secret/*"}) },
			want: func(p *Project) { p.SourceRepos = []string{"*", "!https://git.example.com/secret/*"} },
		},
		{
			name: "deny patterns in destinations",
			edit: func(o map[string]any) {
				set(o, "spec.destinations", []any{
					map[string]any{"server": "*", "namespace": "!kube-system"},
					map[string]any{"server": "!https://prod.example.com", "namespace": "*"},
				})
			},
			want: func(p *Project) {
				p.Destinations = []ProjectDestination{{Server: "*", Namespace: "!kube-system"}, {Server: "!https://prod.example.com", Namespace: "*"}}
			},
		},
		{
			name: "destinations by cluster name",
			edit: func(o map[string]any) {
				set(o, "spec.destinations", []any{map[string]any{"name": "prod-*", "namespace": "*"},
					map[string]any{"name": "!prod-eu", "server": "https://prod.example.com"}})
			},
			want: func(p *Project) {
				p.Destinations = []ProjectDestination{{Name: "prod-*", Namespace: "*"}, {Name: "!prod-eu", Server: "https://prod.example.com"}}
			},
		},
		{
			name: "orphanedResources",
			edit: func(o map[string]any) {
				set(o, "spec.orphanedResources", map[string]any{"warn": true, "ignore": []any{map[string]any{"kind": "ConfigMap", "name": "kube-*"}}})
			},
			want: func(p *Project) {
				p.OrphanedResources = &OrphanedResources{Warn: true, Ignore: []OrphanedResourceKey{{Kind: "ConfigMap", Name: "kube-*"}}}
			},
		},
		{
			name: "destinationServiceAccounts",
			edit: func(o map[string]any) {
				set(o, "spec.destinationServiceAccounts", []any{map[string]any{"server": "*", "namespace": "team-*", "defaultServiceAccount": "ops:deployer"}})
			},
			want: func(p *Project) {
				p.DestinationServiceAccounts = []DestinationServiceAccount{{Server: "*", Namespace: "team-*", DefaultServiceAccount: "ops:deployer"}}
			},
		},
		{
			name: "sourceNamespaces",
			edit: func(o map[string]any) { set(o, "spec.sourceNamespaces", []any{"team-*", "!team-x"}) },
			want: func(p *Project) { p.SourceNamespaces = []string{"team-*", "!team-x"} },
		},
		{
			name: "deny pattern on the in-cluster name",
			edit: func(o map[string]any) {
				set(o, "spec.destinations", []any{map[string]any{"name": "!in-cluster", "namespace": "*"}})
			},
			want: func(p *Project) {
				p.Destinations = []ProjectDestination{{Server: "!" + InClusterServer, Namespace: "*"}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fixtureObject(t, "appproject.yaml")
			tt.edit(obj)
			got, err := ParseProject(marshal(t, obj))
			if err != nil {
				t.Fatalf("ParseProject() = %v", err)
			}
			want := base
			want.SyncWindows = slices.Clone(base.SyncWindows)
			want.Destinations = slices.Clone(base.Destinations)
			want.SourceRepos = slices.Clone(base.SourceRepos)
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseProject() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWindlassSpec(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		parse  func([]byte) (any, error)
		field  string
		reason string
	}{
		{
			name:  "unknown field names its path",
			doc:   "name: web\nsource:\n  repoURL: https://git.example.com/web.git\n  helm:\n    passCredentials: true\n",
			parse: parseApp, field: "source.helm.passCredentials", reason: "unknown field",
		},
		{
			name:  "wrong type",
			doc:   `{"name": "web", "source": {"repoURL": "https://git.example.com/web.git"}, "refreshSeconds": "60"}`,
			parse: parseApp, field: "refreshSeconds", reason: "must be an integer",
		},
		{
			name:  "invalid application",
			doc:   "name: Web\nsource:\n  repoURL: https://git.example.com/web.git\n",
			parse: parseApp, field: "name", reason: "DNS subdomain",
		},
		{
			name:  "dotted application name",
			doc:   "name: example.guestbook\nsource:\n  repoURL: https://git.example.com/web.git\n",
			parse: parseApp,
		},
		{
			name:  "dotted Argo CD application name",
			doc:   "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: example.guestbook\nspec:\n  source:\n    repoURL: https://git.example.com/web.git\n",
			parse: parseApp,
		},
		{
			name:  "dotted Argo CD application name with an empty part",
			doc:   "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: example..guestbook\nspec:\n  source:\n    repoURL: https://git.example.com/web.git\n",
			parse: parseApp, field: "metadata.name", reason: "DNS subdomain",
		},
		{
			name:  "project",
			doc:   "name: team-b\nsourceRepos: ['*']\ndestinations:\n  - server: '*'\n    namespace: team-b\n",
			parse: parseProject,
		},
		{
			name:  "project name",
			doc:   "description: no name\n",
			parse: parseProject, field: "name", reason: "is required",
		},
		{
			name:  "unknown project field",
			doc:   "name: team-b\nroles:\n  - name: ci\n    jwtTokens: []\n",
			parse: parseProject, field: "roles[0].jwtTokens", reason: "unknown field",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.parse([]byte(tt.doc))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("parse = %v, want nil", err)
				}
				return
			}
			wantFieldError(t, err, tt.field, tt.reason)
		})
	}
}

func parseApp(data []byte) (any, error)     { return ParseApplication(data) }
func parseProject(data []byte) (any, error) { return ParseProject(data) }

// bomb is the billion laughs: nine levels of nine-fold aliases.
const bomb = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

func TestParseInputErrors(t *testing.T) {
	guestbook := string(readFixture(t, "guestbook.yaml"))
	// Few aliases of a long string: under the YAML decoder's alias
	// ratio, over the import's expansion bound.
	wide := "a: &a " + strings.Repeat("x", 4000) + "\nb: [" + strings.Repeat("*a,", 90) + "*a]\n"
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{name: "empty", doc: "", want: "input is empty"},
		{name: "comments only", doc: "# nothing\n---\n\n# still nothing\n", want: "input is empty"},
		{name: "two documents", doc: guestbook + "---\n" + guestbook, want: "2 YAML documents"},
		{name: "oversize", doc: strings.Repeat("#", maxInputBytes) + "\n" + guestbook, want: "more than the limit"},
		{name: "billion laughs", doc: bomb, want: "excessive aliasing"},
		{name: "wide alias expansion", doc: wide, want: "YAML bomb"},
		{name: "bad YAML", doc: "metadata: [\n", want: "parse document"},
		{name: "duplicate key", doc: "name: a\nname: b\n", want: "already set"},
		{name: "list", doc: "- name: a\n", want: "not an object"},
		{name: "scalar", doc: "guestbook\n", want: "not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := ParseApplication([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseApplication() = %v, want an error containing %q", err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			var fe *FieldError
			if errors.As(err, &fe) {
				t.Errorf("error %v is a FieldError; the input as a whole is at fault", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("rejecting the input took %v", d)
			}
		})
	}
	if _, err := ParseProject([]byte(bomb)); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("ParseProject(bomb) = %v, want the aliasing error", err)
	}
}

func TestDocuments(t *testing.T) {
	tests := []struct {
		doc  string
		want []string
	}{
		{"", nil},
		{"\n  \n# comment\n", nil},
		{"a: 1\n", []string{"a: 1\n"}},
		{"---\na: 1\n", []string{"---\na: 1\n"}},
		{"--- # first\na: 1\n---\n", []string{"--- # first\na: 1\n"}},
		{"%YAML 1.1\n---\na: 1\n...\n", []string{"---\na: 1\n"}},
		{"a: 1\n---\nb: 2\n", []string{"a: 1\n", "---\nb: 2\n"}},
		{"--- {a: 1}\n--- {b: 2}\n", []string{"--- {a: 1}\n", "--- {b: 2}\n"}},
		{"a: 1\n...\nb: 2", []string{"a: 1\n", "b: 2"}},
		{"# apps\n---\n---\na: 1\n---\n# none\n---\nb: 2\n", []string{"---\na: 1\n", "---\nb: 2\n"}},
		{"a: |\n  ---\n  x\n", []string{"a: |\n  ---\n  x\n"}},
		{"a: ---x\n---x: 1\n", []string{"a: ---x\n---x: 1\n"}},
		{`{"a": "---"}`, []string{`{"a": "---"}`}},
		{"a: 1\r\n---\r\nb: 2\r\n", []string{"a: 1\r\n", "---\r\nb: 2\r\n"}},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range Documents([]byte(tt.doc)) {
			got = append(got, string(d))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Documents(%q) (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// TestArgoSchema pins what the import does with each Argo CD field, so
// that a field added to an embedded Windlass type shows up in review.
func TestArgoSchema(t *testing.T) {
	var b bytes.Buffer
	for _, root := range []struct {
		kind string
		typ  reflect.Type
	}{{argoKindApp, reflect.TypeFor[argoApplication]()}, {argoKindProject, reflect.TypeFor[argoProject]()}} {
		fmt.Fprintf(&b, "# %s\n", root.kind)
		describeSchema(&b, root.typ, "")
	}
	golden(t, "schema.golden", b.Bytes())
}

func describeSchema(b *bytes.Buffer, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			path += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		fmt.Fprintf(b, "%s: mapped\n", path)
		return
	}
	fields := fieldsOf(t)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f, field := fields[name], strings.TrimPrefix(path+"."+name, ".")
		switch {
		case f.typ != notMappedType:
			describeSchema(b, f.typ, field)
		case f.rule == ruleIgnore:
			fmt.Fprintf(b, "%s: ignored\n", field)
		case f.rule == ruleUnknown:
			fmt.Fprintf(b, "%s: unknown (Windlass only)\n", field)
		default:
			fmt.Fprintf(b, "%s: rejected when set: %s\n", field, f.why)
		}
	}
}
