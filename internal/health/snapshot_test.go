package health

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A Checker rebuilt from its Snapshot, through JSON as it travels between
// processes, assesses every fixture exactly as the original does: the
// same scripts, the same precedence between layers and wildcards, the same
// names in messages and the same limits.
func TestSnapshotRoundTrip(t *testing.T) {
	tree := filepath.Join("testdata", "customizations")
	checkers := []struct {
		name string
		opts Options
	}{
		{"none", Options{}},
		{"tree", Options{CustomizationsDir: tree}},
		{"inline over tree", Options{CustomizationsDir: tree, Inline: map[string]string{
			"example.com/Widget": `return {status = "Suspended", message = "inline wins"}`,
			"*.crossplane.io/*":  `return {status = "Degraded", message = "inline wildcard wins"}`,
			"ConfigMap":          `return {status = "Healthy", message = obj.metadata.name}`,
		}}},
		{"limits", Options{CustomizationsDir: tree, Timeout: 2 * time.Second, MaxInstructions: 1000, MemoryLimit: 1 << 20}},
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "objects"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range checkers {
		t.Run(tc.name, func(t *testing.T) {
			orig, err := New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(orig.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			var snap Snapshot
			if err := json.Unmarshal(b, &snap); err != nil {
				t.Fatal(err)
			}
			rebuilt := FromSnapshot(snap)
			if diff := cmp.Diff(orig.Snapshot(), rebuilt.Snapshot()); diff != "" {
				t.Errorf("snapshot of the rebuilt checker (-want +got):\n%s", diff)
			}
			for _, e := range entries {
				name := strings.TrimSuffix(e.Name(), ".yaml")
				obj := fixture(t, name)
				if diff := cmp.Diff(orig.Assess(obj), rebuilt.Assess(obj)); diff != "" {
					t.Errorf("%s (-original +rebuilt):\n%s", name, diff)
				}
			}
		})
	}
}

// The zero Snapshot is the built-in checks with the default limits.
func TestSnapshotZero(t *testing.T) {
	c := FromSnapshot(Snapshot{})
	want := defaultChecker.Snapshot()
	if diff := cmp.Diff(want, c.Snapshot()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := c.Assess(fixture(t, "lua-widget-ready")); got != Assess(fixture(t, "lua-widget-ready")) {
		t.Errorf("Assess = %+v, want the built-in %+v", got, Assess(fixture(t, "lua-widget-ready")))
	}
}
