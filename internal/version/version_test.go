package version

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name string
		info Info
		want string
	}{
		{name: "no commit", info: Info{Version: "0.1.0", GoVersion: "go1.26"}, want: "windlass 0.1.0 go1.26"},
		{name: "commit", info: Info{Version: "0.1.0", Commit: "61d196f0123456789", GoVersion: "go1.26"}, want: "windlass 0.1.0 (61d196f01234) go1.26"},
		{name: "modified", info: Info{Version: "0.1.0", Commit: "61d196f", Modified: true, GoVersion: "go1.26"}, want: "windlass 0.1.0 (61d196f-dirty) go1.26"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.info.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGet(t *testing.T) {
	got := Get()
	if got.Version != Version || !strings.HasPrefix(got.GoVersion, "go") {
		t.Fatalf("Get() = %+v", got)
	}
}
