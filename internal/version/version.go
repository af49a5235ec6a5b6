// Package version holds Windlass's release version. A release that changes
// running workflow logic follows the versioning rule in
// docs/architecture.md.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release this code is, or will be, tagged as.
const Version = "0.1.0"

// Info is the version of this binary, with the commit it was built from
// when the build recorded one.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
}

// Get returns this binary's Info.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String is the one-line form `windlass version` prints.
func (i Info) String() string {
	s := "windlass " + i.Version
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "-dirty"
		}
		s += " (" + c + ")"
	}
	return s + " " + i.GoVersion
}
