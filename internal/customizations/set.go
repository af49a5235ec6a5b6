package customizations

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	resactions "github.com/windlass-cd/windlass/internal/actions"
	"github.com/windlass-cd/windlass/internal/health"
)

// ActionScripts are the Lua resource actions of one kind, as source: the
// discovery script that lists the available actions, and each action's
// script by name.
type ActionScripts struct {
	Discovery string            `json:"discovery,omitempty"`
	Actions   map[string]string `json:"actions,omitempty"`
}

// Set is one load of the customizations. It is read-only once built.
type Set struct {
	// Health assesses health with the set's scripts.
	Health *health.Checker
	// Actions maps "group/Kind" ("Kind" for the core group; "*" as a
	// wildcard, from a "_" in the tree) to its action scripts.
	Actions map[string]ActionScripts
	// Revision is the commit the tree came from; empty for a directory.
	Revision string
	// Digest names the set's content: its Bundle's SHA-256, in hex.
	Digest string
	// Catalog lists and runs the built-in actions and Actions.
	Catalog *resactions.Catalog
}

// ActionsFor returns the action scripts of a group and kind: those of its
// exact key, else of the first wildcard key (in key order) that matches.
func (s *Set) ActionsFor(group, kind string) (ActionScripts, bool) {
	key := kind
	if group != "" {
		key = group + "/" + kind
	}
	if a, ok := s.Actions[key]; ok {
		return a, true
	}
	for _, k := range slices.Sorted(maps.Keys(s.Actions)) {
		if !strings.Contains(k, "*") {
			continue
		}
		// "*" matches any run of characters, "/" included, as in the
		// health scripts' keys.
		re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(k), `\*`, ".*") + "$")
		if re.MatchString(key) {
			return s.Actions[k], true
		}
	}
	return ActionScripts{}, false
}

// Bounds of a tree's action scripts.
const (
	maxScriptBytes = 1 << 20
	maxActionFiles = 10_000
)

var (
	discoveryPath = regexp.MustCompile(`^(?:([^/]+)/)?([^/]+)/actions/discovery\.lua$`)
	actionPath    = regexp.MustCompile(`^(?:([^/]+)/)?([^/]+)/actions/([^/]+)/action\.lua$`)
)

// build loads a Set from a tree (dir may be empty: no tree) and the inline
// scripts, which win. A script that does not compile fails the load.
func build(dir string, opts health.Options, inline map[string]ActionScripts) (*Set, error) {
	opts.CustomizationsDir = dir
	hc, err := health.New(opts)
	if err != nil {
		return nil, err
	}
	if err := hc.CompileErrors(); err != nil {
		return nil, err
	}
	actions := map[string]ActionScripts{}
	if dir != "" {
		if actions, err = loadActions(dir); err != nil {
			return nil, err
		}
	}
	for k, a := range inline {
		actions[k] = a
	}
	cat, err := catalog(actions, hc)
	if err != nil {
		return nil, err
	}
	return &Set{Health: hc, Actions: actions, Catalog: cat}, nil
}

// catalog compiles the action scripts in hc's sandbox, next to the
// built-in actions.
func catalog(actions map[string]ActionScripts, hc *health.Checker) (*resactions.Catalog, error) {
	scripts := make(map[string]resactions.Scripts, len(actions))
	for k, a := range actions {
		scripts[k] = resactions.Scripts{Discovery: a.Discovery, Actions: a.Actions}
	}
	return resactions.FromScripts(scripts, hc)
}

// Bundle is a Set as source, to rebuild it in another process
// (FromBundle): the API server, which runs no worker, assesses health and
// lists actions with the workers' scripts.
type Bundle struct {
	Health   health.Snapshot          `json:"health"`
	Actions  map[string]ActionScripts `json:"actions,omitempty"`
	Revision string                   `json:"revision,omitempty"`
}

// Bundle returns the set as source.
func (s *Set) Bundle() Bundle {
	return Bundle{Health: s.Health.Snapshot(), Actions: s.Actions, Revision: s.Revision}
}

// FromBundle rebuilds a Set. Scripts that do not compile fail it, as they
// fail a load.
func FromBundle(b Bundle) (*Set, error) {
	hc := health.FromSnapshot(b.Health)
	if err := hc.CompileErrors(); err != nil {
		return nil, err
	}
	cat, err := catalog(b.Actions, hc)
	if err != nil {
		return nil, err
	}
	set := &Set{Health: hc, Actions: b.Actions, Revision: b.Revision, Catalog: cat}
	if set.Actions == nil {
		set.Actions = map[string]ActionScripts{}
	}
	return set, set.digest()
}

// digest sets Digest from the set's Bundle.
func (s *Set) digest() error {
	b, err := json.Marshal(s.Bundle())
	if err != nil {
		return fmt.Errorf("digest the customizations: %w", err)
	}
	sum := sha256.Sum256(b)
	s.Digest = hex.EncodeToString(sum[:])
	return nil
}

// loadActions reads the actions/ folders of a tree:
// <group>/<Kind>/actions/discovery.lua and
// <group>/<Kind>/actions/<name>/action.lua (<Kind>/actions/... for the
// core group).
func loadActions(dir string) (map[string]ActionScripts, error) {
	out := map[string]ActionScripts{}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && strings.Count(rel, "/") >= 4 {
				return filepath.SkipDir
			}
			return nil
		}
		var group, kind, name string
		if m := discoveryPath.FindStringSubmatch(rel); m != nil {
			group, kind = m[1], m[2]
		} else if m := actionPath.FindStringSubmatch(rel); m != nil {
			group, kind, name = m[1], m[2], m[3]
		} else {
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if files++; files > maxActionFiles {
			return fmt.Errorf("more than %d action scripts", maxActionFiles)
		}
		src, err := readScript(path, d)
		if err != nil {
			return err
		}
		key := strings.ReplaceAll(kind, "_", "*")
		if group != "" {
			key = strings.ReplaceAll(group, "_", "*") + "/" + key
		}
		a := out[key]
		if name == "" {
			a.Discovery = src
		} else {
			if a.Actions == nil {
				a.Actions = map[string]string{}
			}
			a.Actions[name] = src
		}
		out[key] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("action scripts %s: %w", dir, err)
	}
	return out, nil
}

func readScript(path string, d fs.DirEntry) (string, error) {
	info, err := d.Info()
	if err != nil {
		return "", err
	}
	if info.Size() > maxScriptBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxScriptBytes)
	}
	src, err := os.ReadFile(path)
	return string(src), err
}
