package migrate

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/settings"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeWindlass is Windlass's state in memory, as both Current and Writer.
type fakeWindlass struct {
	projects map[string]appspec.Project
	apps     map[string]appspec.Application
	repos    map[string]settings.Repository
	tmpls    map[string]settings.Repository
	clusters map[string]settings.Cluster
	// notifyConfig and notifySecret are the notifications settings.
	notifyConfig string
	notifySecret map[string][]byte
	// fail makes the Put of the object of this name fail.
	fail string
}

func newFake() *fakeWindlass {
	return &fakeWindlass{
		projects: map[string]appspec.Project{appspec.DefaultProject: appspec.DefaultProjectSpec()},
		apps:     map[string]appspec.Application{}, repos: map[string]settings.Repository{}, tmpls: map[string]settings.Repository{}, clusters: map[string]settings.Cluster{},
		notifySecret: map[string][]byte{},
	}
}

func (f *fakeWindlass) Project(_ context.Context, name string) (*appspec.Project, error) {
	if p, ok := f.projects[name]; ok {
		return &p, nil
	}
	return nil, nil
}

func (f *fakeWindlass) App(_ context.Context, project, name string) (*appspec.Application, error) {
	if a, ok := f.apps[project+"/"+name]; ok {
		return &a, nil
	}
	return nil, nil
}

func (f *fakeWindlass) Apps(context.Context) ([]AppRef, error) {
	var out []AppRef
	for _, k := range sortedKeys(f.apps) {
		out = append(out, AppRef{Project: f.apps[k].Project, Name: f.apps[k].Name})
	}
	return out, nil
}

func (f *fakeWindlass) Repos(context.Context) ([]settings.RepositoryView, error) {
	var out []settings.RepositoryView
	for _, k := range sortedKeys(f.repos) {
		out = append(out, f.repos[k].View())
	}
	return out, nil
}

func (f *fakeWindlass) RepoCreds(context.Context) ([]settings.RepositoryView, error) {
	var out []settings.RepositoryView
	for _, k := range sortedKeys(f.tmpls) {
		out = append(out, f.tmpls[k].View())
	}
	return out, nil
}

func (f *fakeWindlass) Clusters(context.Context) ([]settings.ClusterView, error) {
	var out []settings.ClusterView
	for _, k := range sortedKeys(f.clusters) {
		out = append(out, f.clusters[k].View())
	}
	return out, nil
}

var errRefused = errors.New("refused by the fake API")

func (f *fakeWindlass) Notifications(context.Context) (string, []string, error) {
	return f.notifyConfig, sortedKeys(f.notifySecret), nil
}

func (f *fakeWindlass) PutNotifications(_ context.Context, config string) error {
	if f.fail == NotificationsCMName {
		return errRefused
	}
	f.notifyConfig = config
	return nil
}

func (f *fakeWindlass) PutNotificationsSecret(_ context.Context, data map[string][]byte) error {
	for k, v := range data {
		f.notifySecret[k] = v
	}
	return nil
}

func (f *fakeWindlass) PutProject(_ context.Context, p appspec.Project, _ bool) error {
	if p.Name == f.fail {
		return errRefused
	}
	f.projects[p.Name] = p
	return nil
}

func (f *fakeWindlass) PutRepo(_ context.Context, r settings.Repository, _ bool) error {
	if r.URL == f.fail {
		return errRefused
	}
	f.repos[settings.CanonicalRepoURL(r.URL)] = r
	return nil
}

func (f *fakeWindlass) PutRepoCreds(_ context.Context, r settings.Repository, _ bool) error {
	if r.URL == f.fail {
		return errRefused
	}
	f.tmpls[r.URL] = r
	return nil
}

func (f *fakeWindlass) PutCluster(_ context.Context, c settings.Cluster, _ bool) error {
	if c.Name == f.fail {
		return errRefused
	}
	f.clusters[c.Name] = c
	return nil
}

func (f *fakeWindlass) PutApp(_ context.Context, a appspec.Application, _ bool) error {
	if a.Name == f.fail {
		return errRefused
	}
	f.apps[a.Project+"/"+a.Name] = a
	return nil
}

// Secret values of the fixtures: none may show in a plan.
const (
	secretPassword = "hunter2-repo-password"
	secretTemplate = "template-token-value"
	secretToken    = "cluster-bearer-token"
	secretSSHKey   = "-----BEGIN OPENSSH PRIVATE KEY-----\nssh-key-body\n-----END OPENSSH PRIVATE KEY-----\n"
)

// secretAppKey is a GitHub App's private key, new for each test binary.
var secretAppKey = sync.OnceValue(func() string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
})

func obj(t *testing.T, y string) unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return unstructured.Unstructured{Object: m}
}

func secret(name, typ string, data map[string]string) corev1.Secret {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", Labels: map[string]string{SecretTypeLabel: typ}},
		Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// installation is an Argo CD as a team might run it, with one of every
// kind of bad input.
func installation(t *testing.T) *Source {
	return &Source{
		Namespace: "argocd",
		Applications: []unstructured.Unstructured{
			obj(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
  uid: 0d6c7c5e-0000-0000-0000-000000000001
  resourceVersion: "42"
  labels: {team: web}
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: web
  source: {repoURL: https://git.example.com/org/guestbook.git, path: guestbook, targetRevision: HEAD}
  destination: {server: https://kubernetes.default.svc, namespace: guestbook}
  syncPolicy: {automated: {prune: true}}
status:
  sync: {status: Synced}
operation:
  sync: {revision: abc}
`),
			obj(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: private, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://git.example.com/team/private.git, path: app}
  destination: {name: prod, namespace: private}
`),
			obj(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: broken, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://git.example.com/org/x.git, path: x, notAField: true}
  destination: {server: https://kubernetes.default.svc, namespace: x}
`),
			obj(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: orphan, namespace: argocd}
spec:
  project: bad
  source: {repoURL: https://git.example.com/org/x.git, path: x}
  destination: {server: https://kubernetes.default.svc, namespace: x}
`),
		},
		Projects: []unstructured.Unstructured{
			obj(t, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
`),
			obj(t, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: web, namespace: argocd}
spec:
  description: the web team
  sourceRepos: [https://git.example.com/org/*]
  destinations: [{server: https://kubernetes.default.svc, namespace: guestbook}, {name: '!prod', namespace: '*'}]
`),
			obj(t, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: bad, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  signatureKeys: [{keyID: ABCDEF}]
`),
		},
		Settings: map[string]string{
			"application.resourceTrackingMethod":                         "annotation+label",
			"resource.customizations.health.cert-manager.io_Certificate": "hs = {status = \"Healthy\"}\nreturn hs\n",
			"resource.customizations.health.Pod":                         "return {status = ",
			"resource.customizations.ignoreDifferences.all":              "managedFieldsManagers: [kube-controller-manager]\n",
			"resource.customizations.ignoreDifferences.apps_Deployment":  "jsonPointers: [/spec/replicas]\n",
			"resource.customizations.actions.apps_Deployment":            "discovery.lua: ''\n",
			"resource.exclusions":                                        "- apiGroups: [cilium.io]\n  kinds: [CiliumIdentity]\n",
			"url":                                                        "https://argocd.example.com",
			"accounts.ci-bot":                                            "apiKey",
			"accounts.alice":                                             "login, apiKey",
			"accounts.alice.enabled":                                     "false",
			"accounts.Bad_Name":                                          "login",
			"timeout.reconciliation":                                     "180s",
		},
		RBAC: map[string]string{
			"policy.csv":         "p, role:deployer, applications, sync, */*, allow\ng, web-team, role:deployer\n",
			"policy.overlay.csv": "g, ops, role:admin\n",
			"policy.default":     "role:readonly",
			"scopes":             "[groups, email]",
		},
		KnownHosts: "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
		Secrets: []corev1.Secret{
			secret("repo-guestbook", typeRepository, map[string]string{"url": "https://git.example.com/org/guestbook.git", "username": "deploy", "password": secretPassword, "project": "web"}),
			secret("repo-ssh", typeRepository, map[string]string{"url": "git@git.example.com:org/ssh.git", "sshPrivateKey": secretSSHKey}),
			secret("repo-lfs", typeRepository, map[string]string{"url": "https://git.example.com/org/lfs.git", "enableLfs": "true"}),
			secret("repo-charts", typeRepository, map[string]string{"url": "https://charts.example.com", "type": "helm"}),
			secret("creds-team", typeRepoCreds, map[string]string{"url": "https://git.example.com/team/", "username": "bot", "password": secretTemplate}),
			secret("creds-github-app", typeRepoCreds, map[string]string{"url": "https://github.example.com/acme/", "githubAppID": "12",
				"githubAppInstallationID": "34", "githubAppPrivateKey": secretAppKey(), "githubAppEnterpriseBaseUrl": "https://github.example.com/api/v3"}),
			secret("repo-github-app", typeRepository, map[string]string{"url": "https://github.com/acme/app.git", "githubAppID": "56",
				"githubAppInstallationID": "78", "githubAppPrivateKey": secretAppKey()}),
			secret("repo-github-app-bad-key", typeRepository, map[string]string{"url": "https://github.com/acme/bad.git", "githubAppID": "56",
				"githubAppInstallationID": "78", "githubAppPrivateKey": "not a key"}),
			secret("cluster-prod", typeCluster, map[string]string{"name": "prod", "server": "https://prod.example.com:6443",
				"config": `{"bearerToken":"` + secretToken + `","tlsClientConfig":{"insecure":false,"caData":"LS0tLS1CRUdJTg=="}}`}),
			secret("cluster-local", typeCluster, map[string]string{"name": "in-cluster", "server": "https://kubernetes.default.svc"}),
			secret("cluster-eks", typeCluster, map[string]string{"name": "eks", "server": "https://eks.example.com",
				"config": `{"awsAuthConfig":{"clusterName":"eks"}}`}),
			secret("mystery", "bogus", map[string]string{"url": "https://x.example.com"}),
		},
		Controllers: []Controller{{Kind: "StatefulSet", Namespace: "argocd", Name: ControllerName, Replicas: 1}},
	}
}

func TestPlan(t *testing.T) {
	t.Chdir(t.TempDir())
	fake := newFake()
	// An app Windlass has already, from another path.
	fake.apps["default/private"] = appspec.Application{Name: "private", Project: "default",
		Source:      appspec.Source{RepoURL: "https://git.example.com/team/private.git", Path: "old"},
		Destination: appspec.Destination{Server: "https://prod.example.com:6443", Namespace: "private"}}.Defaulted()
	steps := []struct {
		name  string
		opts  Options
		apply bool
	}{
		// A dry run while the controller runs: the controller's row refuses.
		{name: "dry_run", opts: Options{OutDir: "out"}},
		// --force: the controller's row is skipped and everything applied.
		{name: "forced_run", opts: Options{OutDir: "out", Force: true}, apply: true},
		// Run again: what was created is unchanged.
		{name: "second_run", opts: Options{OutDir: "out", Force: true}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			src := installation(t)
			plan, err := Build(t.Context(), src, fake, st.opts)
			if err != nil {
				t.Fatal(err)
			}
			if st.apply {
				plan.Apply(t.Context(), fake)
			}
			var out bytes.Buffer
			plan.Print(&out)
			for _, v := range []string{secretPassword, secretTemplate, secretToken, "ssh-key-body", "PRIVATE KEY", strings.Split(secretAppKey(), "\n")[1]} {
				if strings.Contains(out.String(), v) {
					t.Errorf("the plan shows a secret value %q", v)
				}
			}
			golden(t, filepath.Join(testdataDir, "plan_"+st.name+".golden"), out.Bytes())
			if plan.Refused() == 0 {
				t.Error("Refused() = 0, want the bad input counted")
			}
		})
	}

	// What the forced run created.
	app := fake.apps["web/guestbook"]
	if app.Annotations[TrackingAnnotation] != "annotation+label" || app.Labels["team"] != "web" {
		t.Errorf("guestbook's metadata = %v %v, want the tracking annotation and its labels", app.Annotations, app.Labels)
	}
	wantDiffs := []appspec.ResourceIgnoreDifferences{
		{Group: "*", Kind: "*", ManagedFieldsManagers: []string{"kube-controller-manager"}},
		{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
	}
	if d := cmp.Diff(wantDiffs, app.IgnoreDifferences); d != "" {
		t.Errorf("guestbook's ignoreDifferences (-want +got):\n%s", d)
	}
	if r := fake.repos["https://git.example.com/org/guestbook"]; r.Password != secretPassword || r.Project != "web" {
		t.Errorf("repository guestbook = user %q project %q, want its password and project", r.Username, r.Project)
	}
	if r, ok := fake.tmpls["https://git.example.com/team/"]; !ok || r.Username != "bot" || r.Password != secretTemplate {
		t.Errorf("template team = user %q, want the repo-creds' credentials", r.Username)
	}
	wantApp := settings.Repository{URL: "https://github.example.com/acme/", GitHubAppID: 12, GitHubAppInstallationID: 34,
		GitHubAppPrivateKey: secretAppKey(), GitHubAppEnterpriseBaseURL: "https://github.example.com/api/v3"}
	if d := cmp.Diff(wantApp, fake.tmpls[wantApp.URL]); d != "" {
		t.Errorf("GitHub App template (-want +got):\n%s", d)
	}
	wantApp = settings.Repository{URL: "https://github.com/acme/app.git", GitHubAppID: 56, GitHubAppInstallationID: 78, GitHubAppPrivateKey: secretAppKey()}
	if d := cmp.Diff(wantApp, fake.repos["https://github.com/acme/app"]); d != "" {
		t.Errorf("GitHub App repository (-want +got):\n%s", d)
	}
	if _, ok := fake.repos["https://git.example.com/team/private"]; ok {
		t.Error("repository private, which only an app names, was registered; the template serves it")
	}
	if r := fake.repos["git@git.example.com:org/ssh"]; r.SSHPrivateKey != secretSSHKey || r.SSHKnownHosts != installation(t).KnownHosts {
		t.Errorf("repository ssh = key %v, known hosts %q; want its key and Argo CD's known hosts", r.SSHPrivateKey != "", r.SSHKnownHosts)
	}
	if c := fake.clusters["prod"]; c.BearerToken != secretToken || c.CAData != "-----BEGIN" {
		t.Errorf("cluster prod = %+v, want its token and decoded CA", c.View())
	}
	// The keys the workers read with --argocd-cm, as the worker reads them.
	cm, err := customizations.LoadConfigMap(filepath.Join("out", argoCDCMFile))
	if err != nil {
		t.Fatal(err)
	}
	if !cm.Filter.Excluded("cilium.io", "CiliumIdentity", appspec.InClusterServer) || len(cm.Actions) != 0 {
		t.Errorf("argocd-cm.yaml = exclusions %v, actions %v; want CiliumIdentity excluded and no actions (they go into the tree)", cm.Exclusions, cm.Actions)
	}
	ac, err := os.ReadFile(filepath.Join("out", authConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join(testdataDir, "auth-config.golden"), ac)
	// The file is what the API's --auth-config reads.
	var file struct {
		Accounts        []auth.AccountConfig `json:"accounts"`
		Policy          string               `json:"policy"`
		PolicyDefault   string               `json:"policyDefault"`
		PolicyMatchMode string               `json:"policyMatchMode"`
	}
	if err := yaml.UnmarshalStrict(ac, &file); err != nil {
		t.Fatalf("auth-config.yaml: %v", err)
	}
	wantAccounts := []auth.AccountConfig{
		{Name: "alice", Enabled: false, Capabilities: []string{auth.CapabilityLogin, auth.CapabilityAPIKey}},
		{Name: "ci-bot", Enabled: true, Capabilities: []string{auth.CapabilityAPIKey}},
	}
	if d := cmp.Diff(wantAccounts, file.Accounts); d != "" {
		t.Errorf("accounts (-want +got):\n%s", d)
	}
	if _, err := os.Stat(filepath.Join("out", customizationsDir, "cert-manager.io", "Certificate", "health.lua")); err != nil {
		t.Errorf("health check not written: %v", err)
	}
	if _, err := os.Stat(filepath.Join("out", customizationsDir, "Pod")); !os.IsNotExist(err) {
		t.Errorf("the refused health check was written: %v", err)
	}
}

// A Writer that refuses one object fails its row; the others go on.
func TestApplyFailureGoesOn(t *testing.T) {
	t.Chdir(t.TempDir())
	fake := newFake()
	fake.fail = "web"
	plan, err := Build(t.Context(), installation(t), fake, Options{OutDir: "out", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	plan.Apply(t.Context(), fake)
	got := map[string]Row{}
	for _, r := range plan.Rows {
		got[r.Kind+" "+r.Name] = r
	}
	if r := got["AppProject web"]; r.Action != ActionFailed || r.Reason != errRefused.Error() {
		t.Errorf("project web: %s %q, want failed with the error", r.Action, r.Reason)
	}
	if _, ok := fake.apps["default/private"]; !ok {
		t.Error("app private was not created after project web failed")
	}
}

// Without --force and with the controller running, Build still plans
// (the dry run shows it) and counts the refusal.
func TestControllerRefuses(t *testing.T) {
	src := &Source{Namespace: "argocd", Settings: map[string]string{},
		Controllers: []Controller{{Kind: "Deployment", Namespace: "argocd", Name: "argocd-application-controller", Replicas: 2}, {Kind: "StatefulSet", Namespace: "other", Name: "old", Replicas: 0}}}
	for _, tc := range []struct {
		force bool
		want  []Action
	}{{false, []Action{ActionRefuse, ActionSkip}}, {true, []Action{ActionSkip, ActionSkip}}} {
		plan, err := Build(t.Context(), src, newFake(), Options{Force: tc.force})
		if err != nil {
			t.Fatal(err)
		}
		var got []Action
		for _, r := range plan.Rows[:2] {
			got = append(got, r.Action)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("force=%v: controller rows (-want +got):\n%s", tc.force, d)
		}
		if n := len(src.Running()); n != 1 {
			t.Errorf("Running() = %d controllers, want 1", n)
		}
	}
}

// testdataDir is absolute: the tests change directory.
var testdataDir, _ = filepath.Abs("testdata")

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}
