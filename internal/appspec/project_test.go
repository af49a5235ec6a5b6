package appspec

import (
	"strings"
	"testing"
	"time"
)

func TestProjectPermits(t *testing.T) {
	p := Project{
		Name:                       "team",
		SourceRepos:                []string{"https://git.example.com/team/*"},
		Destinations:               []ProjectDestination{{Server: InClusterServer, Namespace: "team-*"}},
		ClusterResourceWhitelist:   []GroupKind{{Group: "", Kind: "Namespace"}},
		NamespaceResourceBlacklist: []GroupKind{{Group: "", Kind: "ResourceQuota"}},
	}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"repo in glob", p.PermitsSource("https://git.example.com/team/app.git"), true},
		{"repo outside glob", p.PermitsSource("https://git.example.com/other/app"), false},
		{"destination ok", p.PermitsDestination(Destination{Server: InClusterServer, Namespace: "team-a"}), true},
		{"destination namespace denied", p.PermitsDestination(Destination{Server: InClusterServer, Namespace: "kube-system"}), false},
		{"destination server denied", p.PermitsDestination(Destination{Server: "https://other", Namespace: "team-a"}), false},
		{"cluster kind whitelisted", p.PermitsResource("", "Namespace", false), true},
		{"cluster kind not whitelisted", p.PermitsResource("rbac.authorization.k8s.io", "ClusterRole", false), false},
		{"namespaced kind allowed", p.PermitsResource("apps", "Deployment", true), true},
		{"namespaced kind blacklisted", p.PermitsResource("", "ResourceQuota", true), false},
		{"default project allows cluster kinds", DefaultProjectSpec().PermitsResource("rbac.authorization.k8s.io", "ClusterRole", false), true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	app := Application{Name: "a", Project: "team", Source: Source{RepoURL: "https://evil.example.com/x"},
		Destination: Destination{Server: InClusterServer, Namespace: "team-a"}}
	if err := p.CheckApp(app); err == nil {
		t.Error("CheckApp allowed a repository outside the project")
	}
	app.Source.RepoURL = "https://git.example.com/team/x"
	if err := p.CheckApp(app); err != nil {
		t.Errorf("CheckApp() = %v", err)
	}
	// A repository registered for another project is refused, in any
	// spelling.
	p.ForeignRepos = []string{"https://git.example.com/team/x"}
	for _, u := range []string{"https://git.example.com/team/x", "https://git.example.com/team/x.git"} {
		app.Source.RepoURL = u
		if err := p.CheckApp(app); err == nil || !strings.Contains(err.Error(), "registered for another project") {
			t.Errorf("CheckApp(%s) = %v, want the foreign repository refused", u, err)
		}
	}
}

func TestSyncWindows(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Deny 22:00-02:00 UTC every day; allow window only for "batch" apps
	// from 01:00 for 1h in Europe/Berlin (UTC+1 in January).
	p := Project{Name: "p", SyncWindows: []SyncWindow{
		{Kind: WindowDeny, Schedule: "0 22 * * *", Duration: "4h", Applications: []string{"*"}},
		{Kind: WindowAllow, Schedule: "0 1 * * *", Duration: "1h", Applications: []string{"batch"}, TimeZone: "Europe/Berlin", ManualSync: true},
		{Kind: WindowDeny, Schedule: "0 12 * * *", Duration: "30m", Namespaces: []string{"prod"}, ManualSync: true},
	}}
	tests := []struct {
		name      string
		now       string
		app, ns   string
		manual    bool
		allowed   bool
		nextAfter string
	}{
		{name: "outside every window", now: "2026-01-10T10:00:00Z", app: "web", allowed: true},
		{name: "inside deny", now: "2026-01-10T23:30:00Z", app: "web", allowed: false, nextAfter: "2026-01-11T02:00:00Z"},
		{name: "deny across midnight", now: "2026-01-11T01:59:00Z", app: "web", allowed: false},
		{name: "deny ended", now: "2026-01-11T02:00:00Z", app: "web", allowed: true},
		{name: "manual sync in deny without manualSync", now: "2026-01-10T23:00:00Z", app: "web", manual: true, allowed: false},
		{name: "manual sync in deny with manualSync", now: "2026-01-10T12:10:00Z", app: "x", ns: "prod", manual: true, allowed: true},
		{name: "auto sync in deny with manualSync", now: "2026-01-10T12:10:00Z", app: "x", ns: "prod", allowed: false},
		{name: "allow window closed", now: "2026-01-10T10:00:00Z", app: "batch", allowed: false},
		{name: "allow window open in its time zone", now: "2026-01-10T00:30:00Z", app: "batch", allowed: false}, // the deny wins
		{name: "manual sync while allow window closed", now: "2026-01-10T10:00:00Z", app: "batch", manual: true, allowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := p.SyncAllowed(at(tt.now), tt.app, tt.ns, InClusterServer, tt.manual)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed {
				t.Fatalf("Allowed = %v (%s), want %v", d.Allowed, d.Reason, tt.allowed)
			}
			if !d.Allowed && d.Reason == "" {
				t.Error("a denial must give its reason")
			}
			if tt.nextAfter != "" && !d.NextChange.Equal(at(tt.nextAfter)) {
				t.Errorf("NextChange = %v, want %v", d.NextChange, tt.nextAfter)
			}
		})
	}
	// The allow window alone, open at 01:30 Berlin = 00:30 UTC.
	only := Project{Name: "p", SyncWindows: p.SyncWindows[1:2]}
	d, err := only.SyncAllowed(at("2026-01-10T00:30:00Z"), "batch", "", InClusterServer, false)
	if err != nil || !d.Allowed {
		t.Fatalf("allow window in Europe/Berlin: %+v, %v", d, err)
	}
	bad := Project{Name: "p", SyncWindows: []SyncWindow{{Kind: "maybe", Schedule: "* * * * *", Duration: "1h"}}}
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted a bad window kind")
	}
	bad.SyncWindows[0] = SyncWindow{Kind: WindowAllow, Schedule: "not cron", Duration: "1h"}
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted a bad schedule")
	}
}

func TestSyncWindowAndOperator(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 10, 0, 0, time.UTC)
	// A deny window open at now for the app "web" and the namespace "prod".
	deny := SyncWindow{Kind: WindowDeny, Schedule: "0 12 * * *", Duration: "1h",
		Applications: []string{"web"}, Namespaces: []string{"prod"}, Description: "CHG-1234"}
	tests := []struct {
		name    string
		and     bool
		app, ns string
		allowed bool
	}{
		{name: "or: the app alone matches", app: "web", ns: "dev", allowed: false},
		{name: "or: the namespace alone matches", app: "api", ns: "prod", allowed: false},
		{name: "or: neither matches", app: "api", ns: "dev", allowed: true},
		{name: "and: both match", and: true, app: "web", ns: "prod", allowed: false},
		{name: "and: the app alone matches", and: true, app: "web", ns: "dev", allowed: true},
		{name: "and: the namespace alone matches", and: true, app: "api", ns: "prod", allowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := deny
			w.AndOperator = tt.and
			p := Project{Name: "p", SyncWindows: []SyncWindow{w}}
			d, err := p.SyncAllowed(now, tt.app, tt.ns, InClusterServer, false)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed {
				t.Errorf("Allowed = %v (%s), want %v", d.Allowed, d.Reason, tt.allowed)
			}
		})
	}
	// With AND, the lists left empty do not count, and a window with no
	// list matches nothing.
	empty := Project{Name: "p", SyncWindows: []SyncWindow{{Kind: WindowDeny, Schedule: "0 12 * * *", Duration: "1h", AndOperator: true}}}
	if d, err := empty.SyncAllowed(now, "web", "prod", InClusterServer, false); err != nil || !d.Allowed {
		t.Errorf("a window with no lists: %+v, %v; want allowed", d, err)
	}
}

func TestProjectDenyPatterns(t *testing.T) {
	const prod = "https://prod.example.com"
	tests := []struct {
		name  string
		repos []string
		dests []ProjectDestination
		repo  string
		dest  Destination
		want  bool
	}{
		{name: "repo allowed beside a deny", repos: []string{"*", "!https://git.example.com/secret/*"},
			repo: "https://git.example.com/team/app", want: true},
		{name: "repo denied though * allows it", repos: []string{"*", "!https://git.example.com/secret/*"},
			repo: "https://git.example.com/secret/app", want: false},
		{name: "deny before the allow", repos: []string{"!https://git.example.com/secret/*", "*"},
			repo: "https://git.example.com/secret/app", want: false},
		{name: "deny covers the .git form", repos: []string{"*", "!https://git.example.com/secret/app"},
			repo: "https://git.example.com/secret/app.git", want: false},
		{name: "a deny alone allows the rest", repos: []string{"!https://git.example.com/secret/*"},
			repo: "https://git.example.com/team/app", want: true},
		{name: "namespace denied", dests: []ProjectDestination{{Server: "*", Namespace: "!kube-system"}},
			dest: Destination{Server: InClusterServer, Namespace: "kube-system"}, want: false},
		{name: "namespace beside the denied one", dests: []ProjectDestination{{Server: "*", Namespace: "!kube-system"}},
			dest: Destination{Server: InClusterServer, Namespace: "web"}, want: true},
		{name: "namespace deny wins over another entry", dests: []ProjectDestination{
			{Server: InClusterServer, Namespace: "*"}, {Server: "*", Namespace: "!kube-*"}},
			dest: Destination{Server: InClusterServer, Namespace: "kube-public"}, want: false},
		{name: "server denied", dests: []ProjectDestination{{Server: "*", Namespace: "*"}, {Server: "!" + prod}},
			dest: Destination{Server: prod, Namespace: "web"}, want: false},
		{name: "server beside the denied one", dests: []ProjectDestination{{Server: "*", Namespace: "*"}, {Server: "!" + prod}},
			dest: Destination{Server: InClusterServer, Namespace: "web"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Project{Name: "p", SourceRepos: tt.repos, Destinations: tt.dests}
			var got bool
			if tt.dests == nil {
				got = p.PermitsSource(tt.repo)
			} else {
				got = p.PermitsDestination(tt.dest)
			}
			if got != tt.want {
				t.Errorf("permitted = %v, want %v", got, tt.want)
			}
		})
	}
	// CheckApp names the denied repository.
	p := Project{Name: "p", SourceRepos: []string{"*", "!https://git.example.com/secret/*"},
		Destinations: []ProjectDestination{{Server: "*", Namespace: "*"}}}
	app := Application{Name: "a", Project: "p", Source: Source{RepoURL: "https://git.example.com/secret/x"},
		Destination: Destination{Server: InClusterServer, Namespace: "web"}}
	if err := p.CheckApp(app); err == nil {
		t.Error("CheckApp allowed a denied repository")
	}
}
