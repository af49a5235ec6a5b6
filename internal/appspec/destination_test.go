package appspec

import (
	"strings"
	"testing"
)

func TestProjectPermitsDestinationName(t *testing.T) {
	p := Project{Name: "team", Destinations: []ProjectDestination{
		{Name: "prod-*", Namespace: "team-*"},
		{Server: "https://staging.example.com", Namespace: "*"},
	}}
	deny := Project{Name: "team", Destinations: []ProjectDestination{{Server: "*", Namespace: "*"}, {Name: "!prod-secret"}}}
	tests := []struct {
		name string
		dest Destination
		want bool
	}{
		{"name matches the name glob", Destination{Name: "prod-eu", Server: "https://eu.example.com", Namespace: "team-a"}, true},
		{"name matches, namespace does not", Destination{Name: "prod-eu", Server: "https://eu.example.com", Namespace: "other"}, false},
		{"named cluster allowed by its server", Destination{Name: "stage", Server: "https://staging.example.com", Namespace: "x"}, true},
		{"server app is not matched by name globs", Destination{Server: "https://eu.example.com", Namespace: "team-a"}, false},
	}
	for _, tt := range tests {
		if got := p.PermitsDestination(tt.dest); got != tt.want {
			t.Errorf("%s: PermitsDestination(%+v) = %v, want %v", tt.name, tt.dest, got, tt.want)
		}
	}
	if deny.PermitsDestination(Destination{Name: "prod-secret", Server: "https://s.example.com", Namespace: "a"}) {
		t.Error("a name deny pattern let its cluster through")
	}
	if !deny.PermitsDestination(Destination{Name: "prod-eu", Server: "https://s.example.com", Namespace: "a"}) {
		t.Error("a name deny pattern denied another cluster")
	}
}

func TestValidateDestination(t *testing.T) {
	base := Application{Name: "a", Source: Source{RepoURL: "https://git.example.com/a.git"}}
	tests := []struct {
		name   string
		dest   Destination
		field  string
		reason string
	}{
		{"name and server both set", Destination{Name: "prod", Server: "https://prod.example.com"}, "destination", "both server"},
		{"name not a cluster name", Destination{Name: "Prod!"}, "destination.name", "DNS label"},
		{"name alone", Destination{Name: "prod"}, "", ""},
		{"in-cluster name with its server", Destination{Name: InClusterName, Server: InClusterServer}, "", ""},
	}
	for _, tt := range tests {
		app := base
		app.Destination = tt.dest
		err := app.Defaulted().Validate()
		fe, _ := err.(*FieldError)
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: Validate() = %v", tt.name, err)
		case tt.field != "" && (fe == nil || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason)):
			t.Errorf("%s: Validate() = %v, want %s: ...%s...", tt.name, err, tt.field, tt.reason)
		}
	}
	if d := (Application{Destination: Destination{Name: InClusterName}}).Defaulted().Destination; d != (Destination{Server: InClusterServer}) {
		t.Errorf("in-cluster defaults to %+v", d)
	}
}

func TestOrphanedResourcesIgnores(t *testing.T) {
	o := OrphanedResources{Ignore: []OrphanedResourceKey{{Kind: "ConfigMap", Name: "kube-*"}, {Group: "apps", Kind: "*"}}}
	tests := []struct {
		group, kind, name string
		want              bool
	}{
		{"", "ConfigMap", "kube-root-ca.crt", true},
		{"", "ConfigMap", "app-config", false},
		{"apps", "Deployment", "web", true},
		{"", "Secret", "kube-x", false},
	}
	for _, tt := range tests {
		if got := o.Ignores(tt.group, tt.kind, tt.name); got != tt.want {
			t.Errorf("Ignores(%q, %q, %q) = %v, want %v", tt.group, tt.kind, tt.name, got, tt.want)
		}
	}
}

func TestServiceAccountFor(t *testing.T) {
	p := Project{DestinationServiceAccounts: []DestinationServiceAccount{
		{Server: InClusterServer, Namespace: "team-*", DefaultServiceAccount: "deployer"},
		{Server: "*", Namespace: "team-a", DefaultServiceAccount: "never-reached"},
		{Server: "https://prod.example.com", Namespace: "*", DefaultServiceAccount: "ops:prod-deployer"},
	}}
	tests := []struct {
		dest Destination
		want string
	}{
		{Destination{Server: InClusterServer, Namespace: "team-a"}, "system:serviceaccount:team-a:deployer"},
		{Destination{Server: "https://prod.example.com", Namespace: "web"}, "system:serviceaccount:ops:prod-deployer"},
		{Destination{Server: "https://other.example.com", Namespace: "web"}, ""},
	}
	for _, tt := range tests {
		got, ok := p.ServiceAccountFor(tt.dest)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("ServiceAccountFor(%+v) = %q, %v; want %q", tt.dest, got, ok, tt.want)
		}
	}
}

func TestPermitsSourceNamespace(t *testing.T) {
	p := Project{Name: "team", SourceNamespaces: []string{"team-*", "!team-secret"}}
	tests := []struct {
		ns   string
		want bool
	}{
		{"", true},
		{"team-a", true},
		{"team-secret", false},
	}
	for _, tt := range tests {
		if got := p.PermitsSourceNamespace(tt.ns); got != tt.want {
			t.Errorf("PermitsSourceNamespace(%q) = %v, want %v", tt.ns, got, tt.want)
		}
	}
	if !(Project{}).PermitsSourceNamespace("anywhere") {
		t.Error("a project without sourceNamespaces refused a namespace")
	}
	p.SourceNamespaces = []string{"team-*"}
	app := Application{Name: "a", Source: Source{RepoURL: "https://git.example.com/a.git"}, SourceNamespace: "other",
		Destination: Destination{Server: InClusterServer, Namespace: "team-a"}}
	p.SourceRepos, p.Destinations = []string{"*"}, []ProjectDestination{{Server: "*", Namespace: "*"}}
	if err := p.CheckApp(app); err == nil || !strings.Contains(err.Error(), "sourceNamespace: applications from namespace other are not permitted in project team") {
		t.Errorf("CheckApp() = %v, want the source namespace refused", err)
	}
}
