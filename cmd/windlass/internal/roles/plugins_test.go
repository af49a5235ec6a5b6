package roles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadPlugins(t *testing.T) {
	tests := []struct {
		name, body, err string
		want            int
	}{
		{name: "good", body: "- name: envsubst\n  discover: {fileName: '*.tmpl'}\n  generate: {command: [sh, -c, 'cat *.tmpl']}\n  timeout: 30s\n", want: 1},
		{name: "unknown field", body: "- name: x\n  generate: {command: [true]}\n  secret: hunter2\n", err: "unknown field"},
		{name: "no generate command", body: "- name: x\n", err: "generate"},
		{name: "not a list", body: "name: x\n", err: "plugins file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "plugins.yaml")
			if err := os.WriteFile(p, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := loadPlugins(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.err)
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Fatalf("loadPlugins = %+v, %v", got, err)
			}
		})
	}
	if got, err := loadPlugins(""); err != nil || got != nil {
		t.Fatalf("no file: %+v, %v", got, err)
	}
}
