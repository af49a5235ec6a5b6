package settings

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/kube"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/testbed"
)

func newStore(t *testing.T, files ...appspec.Project) *Store {
	t.Helper()
	s, err := New(&secretstore.Memory{}, files...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProjects(t *testing.T) {
	ctx := t.Context()
	file := appspec.Project{Name: "platform", SourceRepos: []string{"*"}}
	s := newStore(t, file)
	if p, err := s.Project(ctx, appspec.DefaultProject); err != nil || p.Description != "built-in default project" {
		t.Fatalf("default project = %+v, %v", p, err)
	}
	if _, err := s.Project(ctx, "nope"); !errors.Is(err, ErrProjectNotFound) {
		t.Fatalf("missing project: %v", err)
	}
	team := appspec.Project{Name: "team-a", SourceRepos: []string{"https://git.example/team-a/*"},
		Roles: []appspec.ProjectRole{{Name: "ci", Policies: []string{"p, proj:team-a:ci, applications, sync, team-a/*, allow"}}}}
	if err := s.PutProject(ctx, team); err != nil {
		t.Fatal(err)
	}
	got, err := s.Project(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(team, got); diff != "" {
		t.Fatalf("stored project (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		put  appspec.Project
		want error
	}{
		{"file projects are read-only", file, ErrReadOnly},
		{"invalid name", appspec.Project{Name: "Bad_Name"}, ErrInvalid},
		{"duplicate role", appspec.Project{Name: "x", Roles: []appspec.ProjectRole{{Name: "a"}, {Name: "a"}}}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.PutProject(ctx, tt.put); !errors.Is(err, tt.want) {
				t.Fatalf("put = %v, want %v", err, tt.want)
			}
		})
	}
	list, err := s.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"default", "platform", "team-a"}, names); diff != "" {
		t.Fatalf("projects (-want +got):\n%s", diff)
	}
	if err := s.DeleteProject(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteProject(ctx, "team-a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := s.DeleteProject(ctx, "platform"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete file project: %v", err)
	}
}

func TestReposHideSecrets(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	repo := Repository{URL: "https://git.example/org/app.git", Username: "deploy", Password: "pa55-do-not-show"}
	if err := s.PutRepo(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRepo(ctx, Repository{URL: "https://git.example/org/tok", BearerToken: "tok-do-not-show"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Repo(ctx, "https://git.example/org/app/")
	if err != nil || got.Password != repo.Password {
		t.Fatalf("repo by another spelling = %+v, %v", got, err)
	}
	view := got.View()
	if want := (RepositoryView{URL: repo.URL, Username: "deploy", HasPassword: true}); view != want {
		t.Fatalf("view = %+v", view)
	}
	for _, bad := range []Repository{{}, {URL: "https://x/ y"}, {URL: "https://x/y", Password: "a", BearerToken: "b"}} {
		if err := s.PutRepo(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("put %+v = %v, want invalid", bad, err)
		}
	}
	if err := s.DeleteRepo(ctx, repo.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Repo(ctx, repo.URL); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted repo: %v", err)
	}
}

// A registered cluster, read from a kubeconfig context, gives a
// kube.Factory working clients for its server; unknown servers fail.
func TestClusterFromKubeconfigServesFactory(t *testing.T) {
	env, cleanup, err := testbed.Shared(t.Context(), "settings")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	kc, err := os.ReadFile(env.Cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s := newStore(t)
	c, err := ClusterFromKubeconfig(kc, "", "bed")
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != env.Cluster.Config.Host || !c.View().HasCredentials {
		t.Fatalf("cluster = %+v", c.View())
	}
	if err := s.PutCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	f := kube.NewFactory(&rest.Config{Host: "https://127.0.0.1:1"}, kube.Options{Resolver: s.ClusterConfig})
	for _, server := range []string{c.Server, "bed"} {
		cl, err := f.For(server)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Fatalf("%s: %v", server, err)
		}
	}
	if _, err := f.For("https://unknown.example"); !errors.Is(err, kube.ErrUnknownCluster) {
		t.Fatalf("unknown server: %v", err)
	}
	if _, err := ClusterFromKubeconfig([]byte("not: [a kubeconfig"), "", ""); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("bad kubeconfig: %v", err)
	}
	if err := s.PutCluster(ctx, Cluster{Name: "in-cluster", Server: "https://x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("in-cluster: %v", err)
	}
}

// Credential templates are stored apart from repositories; the TLS,
// proxy and type fields round-trip and are validated; ForeignRepos lists
// the repositories of other projects.
func TestRepoCredsAndTLSFields(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	full := Repository{URL: "https://charts.example/private", Type: RepoTypeHelm, Project: "team", Username: "u", Password: "p",
		TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ClientKey, CAData: pki.CA, Proxy: "http://proxy:3128", NoProxy: ".internal",
		PassCredentials: true}
	if err := s.PutRepo(ctx, full); err != nil {
		t.Fatal(err)
	}
	got, err := s.Repo(ctx, full.URL)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(full, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	want := RepositoryView{URL: full.URL, Type: RepoTypeHelm, Project: "team", Username: "u", HasPassword: true, HasClientCert: true, HasCA: true,
		Proxy: full.Proxy, NoProxy: full.NoProxy, PassCredentials: true}
	if d := cmp.Diff(want, got.View()); d != "" {
		t.Fatalf("view (-want +got):\n%s", d)
	}

	tmpl := Repository{URL: "https://git.example/org/", Username: "bot", Password: "tmpl-secret"}
	if err := s.PutRepoCreds(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if list, err := s.RepoCreds(ctx); err != nil || len(list) != 1 || list[0].Password != "tmpl-secret" {
		t.Fatalf("RepoCreds() = %+v, %v", list, err)
	}
	if repos, err := s.Repos(ctx); err != nil || len(repos) != 1 {
		t.Fatalf("Repos() = %d repositories, %v; want the one registered", len(repos), err)
	}
	if err := s.DeleteRepoCreds(ctx, tmpl.URL); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRepoCreds(ctx, tmpl.URL); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete = %v, want not found", err)
	}

	for name, bad := range map[string]Repository{
		"bad type":               {URL: "https://x/y", Type: "svn"},
		"cert without key":       {URL: "https://x/y", TLSClientCertData: pki.ClientCert},
		"key of another cert":    {URL: "https://x/y", TLSClientCertData: pki.ClientCert, TLSClientCertKey: pki.ServerKey},
		"CA not PEM":             {URL: "https://x/y", CAData: "not a certificate"},
		"proxy not a URL":        {URL: "https://x/y", Proxy: "proxy:3128"},
		"helm repo not http/oci": {URL: "ssh://x/y", Type: RepoTypeHelm},
	} {
		err := s.PutRepo(ctx, bad)
		if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: PutRepo() = %v, want invalid without key material", name, err)
		}
	}
	if err := s.PutRepoCreds(ctx, Repository{URL: "https://x/", Project: "team"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("template with a project: %v, want invalid", err)
	}

	repos := []Repository{{URL: "https://a/x.git", Project: "team"}, {URL: "https://a/y", Project: "other"}, {URL: "https://a/z"}}
	if d := cmp.Diff([]string{"https://a/y"}, ForeignRepos(repos, "team")); d != "" {
		t.Errorf("ForeignRepos(team) (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"https://a/x", "https://a/y"}, ForeignRepos(repos, "default")); d != "" {
		t.Errorf("ForeignRepos(default) (-want +got):\n%s", d)
	}
}

// A GitHub App credential round-trips, on a repository and a template;
// the view shows its IDs but not its key; each bad input is refused
// with the field named and without key material.
func TestRepoGitHubApp(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	gh := testbed.StartGitHubApps(testbed.GitHubAppsOptions{})
	t.Cleanup(gh.Close)
	key, err := gh.NewApp(12, 34)
	if err != nil {
		t.Fatal(err)
	}
	app := Repository{URL: "https://github.example/org/app.git", GitHubAppID: 12, GitHubAppInstallationID: 34, GitHubAppPrivateKey: key,
		GitHubAppEnterpriseBaseURL: "https://github.example/api/v3"}
	if err := s.PutRepo(ctx, app); err != nil {
		t.Fatal(err)
	}
	got, err := s.Repo(ctx, app.URL)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(app, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	want := RepositoryView{URL: app.URL, GitHubAppID: 12, GitHubAppInstallationID: 34, HasGitHubAppPrivateKey: true,
		GitHubAppEnterpriseBaseURL: app.GitHubAppEnterpriseBaseURL}
	if d := cmp.Diff(want, got.View()); d != "" {
		t.Fatalf("view (-want +got):\n%s", d)
	}
	tmpl := app
	tmpl.URL = "https://github.example/org/"
	if err := s.PutRepoCreds(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RepoCredsTemplate(ctx, tmpl.URL); err != nil || got != tmpl {
		t.Fatalf("template round trip = %+v, %v", got.View(), err)
	}

	with := func(f func(r *Repository)) Repository { r := app; f(&r); return r }
	for _, tt := range []struct {
		name, field string
		repo        Repository
	}{
		{"no app ID", "githubAppID", with(func(r *Repository) { r.GitHubAppID = 0 })},
		{"negative app ID", "githubAppID", with(func(r *Repository) { r.GitHubAppID = -1 })},
		{"no installation ID", "githubAppInstallationID", with(func(r *Repository) { r.GitHubAppInstallationID = 0 })},
		{"no key", "githubAppPrivateKey", with(func(r *Repository) { r.GitHubAppPrivateKey = "" })},
		{"key not PEM", "githubAppPrivateKey", with(func(r *Repository) { r.GitHubAppPrivateKey = key[40:] })},
		{"key not RSA", "githubAppPrivateKey", with(func(r *Repository) { r.GitHubAppPrivateKey = pkiKey(t) })},
		{"bad enterprise URL", "githubAppEnterpriseBaseUrl", with(func(r *Repository) { r.GitHubAppEnterpriseBaseURL = "github.example/api/v3" })},
		{"with a password", "githubAppPrivateKey", with(func(r *Repository) { r.Password = "p" })},
		{"ssh URL", "url", with(func(r *Repository) { r.URL = "ssh://git@github.example/org/app.git" })},
		{"helm repository", "githubAppID", with(func(r *Repository) { r.Type = RepoTypeHelm })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := s.PutRepo(ctx, tt.repo)
			var fe *appspec.FieldError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("PutRepo() = %v, want invalid %s", err, tt.field)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), key[40:70]) {
				t.Errorf("error holds key material: %v", err)
			}
		})
	}
}

// pkiKey is a PEM private key that is not RSA (the test PKI's ECDSA).
func pkiKey(t *testing.T) string {
	t.Helper()
	pki, err := testbed.NewTLSPKI()
	if err != nil {
		t.Fatal(err)
	}
	return pki.ClientKey
}
