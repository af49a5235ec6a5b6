package resourcefilter

import (
	"strings"
	"testing"
)

func TestExcluded(t *testing.T) {
	const (
		local  = "https://kubernetes.default.svc"
		remote = "https://prod.example.com:6443"
	)
	type probe struct {
		group, kind, cluster string
		want                 bool
	}
	tests := []struct {
		name       string
		exclusions []Rule
		inclusions []Rule
		probes     []probe
	}{
		{
			name: "no rules exclude nothing",
			probes: []probe{
				{"", "Secret", local, false},
				{"apps", "Deployment", remote, false},
			},
		},
		{
			name:       "an exclusion of a core kind on every cluster",
			exclusions: []Rule{{APIGroups: []string{""}, Kinds: []string{"Secret"}, Clusters: []string{"*"}}},
			probes: []probe{
				{"", "Secret", local, true},
				{"", "Secret", remote, true},
				{"", "ConfigMap", local, false},
				{"example.com", "Secret", local, false},
			},
		},
		{
			name:       "empty lists match anything",
			exclusions: []Rule{{Kinds: []string{"ConfigMap"}}},
			probes: []probe{
				{"", "ConfigMap", local, true},
				{"example.com", "ConfigMap", remote, true},
				{"", "Secret", local, false},
			},
		},
		{
			name:       "globs in groups and clusters; * spans dots and slashes",
			exclusions: []Rule{{APIGroups: []string{"*.crossplane.io"}, Clusters: []string{"https://*.example.com*"}}},
			probes: []probe{
				{"pkg.crossplane.io", "Provider", remote, true},
				{"a.b.crossplane.io", "Thing", remote, true},
				{"pkg.crossplane.io", "Provider", local, false},
				{"crossplane.io", "Provider", remote, false},
			},
		},
		{
			name:       "several kinds and groups in one rule",
			exclusions: []Rule{{APIGroups: []string{"cilium.io", "kyverno.io"}, Kinds: []string{"CiliumIdentity", "PolicyReport"}}},
			probes: []probe{
				{"cilium.io", "CiliumIdentity", local, true},
				{"kyverno.io", "CiliumIdentity", local, true},
				{"kyverno.io", "ClusterPolicy", local, false},
			},
		},
		{
			name:       "inclusions keep only their kinds on the clusters they name",
			inclusions: []Rule{{APIGroups: []string{"", "apps"}, Kinds: []string{"*"}, Clusters: []string{remote}}},
			probes: []probe{
				{"apps", "Deployment", remote, false},
				{"", "Service", remote, false},
				{"batch", "Job", remote, true},
				// No inclusion names the local cluster: everything there.
				{"batch", "Job", local, false},
			},
		},
		{
			name:       "inclusions without clusters apply everywhere",
			inclusions: []Rule{{Kinds: []string{"Deployment", "Service"}}},
			probes: []probe{
				{"apps", "Deployment", local, false},
				{"", "ConfigMap", local, true},
				{"", "ConfigMap", remote, true},
			},
		},
		{
			name:       "an exclusion wins over an inclusion",
			exclusions: []Rule{{Kinds: []string{"Secret"}}},
			inclusions: []Rule{{APIGroups: []string{""}}},
			probes: []probe{
				{"", "Secret", local, true},
				{"", "ConfigMap", local, false},
				{"apps", "Deployment", local, true},
			},
		},
		{
			name:       "character classes and ?",
			exclusions: []Rule{{Kinds: []string{"[CS]ecret?"}}},
			probes: []probe{
				{"", "Secrets", local, true},
				{"", "Secret", local, false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.exclusions, tt.inclusions)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.probes {
				if got := f.Excluded(p.group, p.kind, p.cluster); got != p.want {
					t.Errorf("Excluded(%q, %q, %q) = %v, want %v", p.group, p.kind, p.cluster, got, p.want)
				}
			}
		})
	}
}

func TestNilAndEmpty(t *testing.T) {
	var f *Filter
	if !f.Empty() || f.Excluded("", "Secret", "x") {
		t.Error("a nil filter must exclude nothing")
	}
	f, err := New(nil, nil)
	if err != nil || !f.Empty() {
		t.Errorf("New(nil, nil) = %v, %v; want an empty filter", f, err)
	}
	if f, _ := New([]Rule{{Kinds: []string{"Secret"}}}, nil); f.Empty() {
		t.Error("a filter with an exclusion is not empty")
	}
}

func TestNewBadPattern(t *testing.T) {
	tests := []struct {
		name       string
		exclusions []Rule
		inclusions []Rule
		wantErr    string
	}{
		{name: "unclosed class in an exclusion", exclusions: []Rule{{Kinds: []string{"Secret", "[abc"}}}, wantErr: "resource.exclusions[0].kinds: pattern \"[abc\""},
		{name: "unclosed class in an inclusion's clusters", inclusions: []Rule{{}, {Clusters: []string{"https://[a"}}}, wantErr: "resource.inclusions[1].clusters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.exclusions, tt.inclusions)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
