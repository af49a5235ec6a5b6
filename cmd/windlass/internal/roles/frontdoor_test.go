package roles

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWatchApplicationsFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		want    []string
		wantErr string
	}{
		{name: "off by default"},
		{name: "flag", args: []string{"--watch-applications", "argocd, team-a,,argocd"}, want: []string{"argocd", "team-a"}},
		{name: "environment", env: "apps", want: []string{"apps"}},
		{name: "flag over environment", args: []string{"--watch-applications", "a"}, env: "b", want: []string{"a"}},
		{name: "bad namespace", args: []string{"--watch-applications", "ok,Not_OK"}, wantErr: `watch-applications: namespace "Not_OK"`},
		{name: "bad namespace in environment", env: "-x", wantErr: `watch-applications: namespace "-x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEMPORAL_ADDRESS", "")
			t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
			t.Setenv("WINDLASS_WATCH_APPLICATIONS", tc.env)
			args := append([]string{"--api-address", "127.0.0.1:0", "--redis-address", "127.0.0.1:6379"}, tc.args...)
			for role, load := range map[string]func() (apiSettings, error){
				"server": func() (apiSettings, error) { c, err := loadServerConfig(args); return c.apiSettings, err },
				"dev":    func() (apiSettings, error) { c, err := loadDevConfig(args); return c.apiSettings, err },
			} {
				a, err := load()
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("%s: err = %v, want one containing %q", role, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", role, err)
				}
				got, err := watchNamespaces(a.WatchApplications)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Fatalf("%s: namespaces (-want +got):\n%s", role, d)
				}
			}
		})
	}
}
