package customizations

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/resourcefilter"
)

// argocd-cm's keys.
const (
	keyLegacy     = "resource.customizations"
	prefixHealth  = "resource.customizations.health."
	prefixActions = "resource.customizations.actions."
	prefixIgnore  = "resource.customizations.ignoreDifferences."
	keyExclusions = "resource.exclusions"
	keyInclusions = "resource.inclusions"
	ignoreAll     = "all"
)

// ConfigMap is what Windlass takes from an argocd-cm ConfigMap.
type ConfigMap struct {
	// Health maps "group/Kind" ("Kind" for the core group) to a Lua
	// health script.
	Health map[string]string
	// Actions maps "group/Kind" to its action scripts.
	Actions map[string]ActionScripts
	// IgnoreDifferences are the system-wide rules: one per
	// ignoreDifferences.<group_kind> key, and ignoreDifferences.all as
	// group and kind "*".
	IgnoreDifferences []appspec.ResourceIgnoreDifferences
	// Exclusions and Inclusions are resource.exclusions and
	// resource.inclusions; Filter is them compiled.
	Exclusions, Inclusions []resourcefilter.Rule
	Filter                 *resourcefilter.Filter
	// Ignored names the resource.* keys read without effect.
	Ignored []string
}

// ignoreRule is the value of an ignoreDifferences key.
type ignoreRule struct {
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// actionsValue is the value of an actions key.
type actionsValue struct {
	Discovery   string `json:"discovery.lua"`
	Definitions []struct {
		Name   string `json:"name"`
		Action string `json:"action.lua"`
	} `json:"definitions"`
}

// LoadConfigMap reads an argocd-cm file (see ParseConfigMap).
func LoadConfigMap(path string) (ConfigMap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ConfigMap{}, fmt.Errorf("argocd-cm: %w", err)
	}
	cm, err := ParseConfigMap(data)
	if err != nil {
		return ConfigMap{}, fmt.Errorf("argocd-cm %s: %w", path, err)
	}
	return cm, nil
}

// ParseConfigMap reads a ConfigMap in YAML or JSON, or its data map alone.
// Keys outside resource.* are not Windlass's concern and are skipped.
func ParseConfigMap(data []byte) (ConfigMap, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return ConfigMap{}, err
	}
	if _, isObject := doc["kind"]; isObject {
		if doc["kind"] != "ConfigMap" {
			return ConfigMap{}, fmt.Errorf("kind %v, want ConfigMap", doc["kind"])
		}
		d, _ := doc["data"].(map[string]any)
		doc = d
	}
	cm := ConfigMap{Health: map[string]string{}, Actions: map[string]ActionScripts{}}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		v, ok := doc[k].(string)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: want a string value", k))
			continue
		}
		if err := cm.add(k, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ConfigMap{}, err
	}
	f, err := resourcefilter.New(cm.Exclusions, cm.Inclusions)
	if err != nil {
		return ConfigMap{}, err
	}
	cm.Filter = f
	return cm, nil
}

func (cm *ConfigMap) add(k, v string) error {
	switch {
	case k == keyLegacy:
		return cm.addLegacy(v)
	case strings.HasPrefix(k, prefixHealth):
		key, err := groupKindKey(strings.TrimPrefix(k, prefixHealth))
		if err != nil {
			return err
		}
		cm.Health[key] = v
	case strings.HasPrefix(k, prefixActions):
		key, err := groupKindKey(strings.TrimPrefix(k, prefixActions))
		if err != nil {
			return err
		}
		a, err := ParseActions(v)
		if err != nil {
			return err
		}
		cm.Actions[key] = a
	case strings.HasPrefix(k, prefixIgnore):
		return cm.addIgnore(strings.TrimPrefix(k, prefixIgnore), v)
	case k == keyExclusions, k == keyInclusions:
		var fs []resourcefilter.Rule
		if err := yaml.UnmarshalStrict([]byte(v), &fs); err != nil {
			return err
		}
		if k == keyExclusions {
			cm.Exclusions = fs
		} else {
			cm.Inclusions = fs
		}
	case strings.HasPrefix(k, "resource."):
		cm.Ignored = append(cm.Ignored, k)
	}
	return nil
}

// addLegacy reads the single-key form: "group/Kind": {health.lua, actions,
// ignoreDifferences}.
func (cm *ConfigMap) addLegacy(v string) error {
	var m map[string]map[string]any
	if err := yaml.Unmarshal([]byte(v), &m); err != nil {
		return err
	}
	for _, gk := range slices.Sorted(maps.Keys(m)) {
		key, err := groupKindKey(gk)
		if err != nil {
			return err
		}
		for _, f := range slices.Sorted(maps.Keys(m[gk])) {
			s, ok := m[gk][f].(string)
			if !ok {
				b, err := yaml.Marshal(m[gk][f])
				if err != nil {
					return fmt.Errorf("%s %s: %w", gk, f, err)
				}
				s = string(b)
			}
			switch f {
			case "health.lua":
				cm.Health[key] = s
			case "actions":
				a, err := ParseActions(s)
				if err != nil {
					return fmt.Errorf("%s actions: %w", gk, err)
				}
				cm.Actions[key] = a
			case "ignoreDifferences":
				if err := cm.addIgnore(gk, s); err != nil {
					return err
				}
			default:
				cm.Ignored = append(cm.Ignored, keyLegacy+" "+gk+" "+f)
			}
		}
	}
	return nil
}

func (cm *ConfigMap) addIgnore(gk, v string) error {
	var r ignoreRule
	if err := yaml.UnmarshalStrict([]byte(v), &r); err != nil {
		return err
	}
	rule := appspec.ResourceIgnoreDifferences{Group: "*", Kind: "*",
		JSONPointers: r.JSONPointers, JQPathExpressions: r.JQPathExpressions, ManagedFieldsManagers: r.ManagedFieldsManagers}
	if gk != ignoreAll {
		key, err := groupKindKey(gk)
		if err != nil {
			return err
		}
		rule.Group, rule.Kind, _ = strings.Cut(key, "/")
		if !strings.Contains(key, "/") {
			rule.Group, rule.Kind = "", key
		}
	}
	cm.IgnoreDifferences = append(cm.IgnoreDifferences, rule)
	return nil
}

// ParseActions reads the value of an actions key: a discovery.lua and
// named action.lua definitions.
func ParseActions(v string) (ActionScripts, error) {
	var a actionsValue
	if err := yaml.Unmarshal([]byte(v), &a); err != nil {
		return ActionScripts{}, err
	}
	out := ActionScripts{Discovery: a.Discovery, Actions: map[string]string{}}
	for _, d := range a.Definitions {
		if d.Name == "" || d.Action == "" {
			return ActionScripts{}, errors.New("an action definition needs a name and an action.lua")
		}
		out.Actions[d.Name] = d.Action
	}
	return out, nil
}

// groupKindKey turns argocd-cm's "group_Kind" ("Kind" or "_Kind" for the
// core group), or "group/Kind", into "group/Kind" ("Kind" for the core
// group). "*" may stand in either part.
func groupKindKey(s string) (string, error) {
	group, kind, ok := strings.Cut(s, "/")
	if !ok {
		group, kind, ok = strings.Cut(s, "_")
	}
	if !ok {
		group, kind = "", s
	}
	if kind == "" || strings.ContainsAny(kind, "/_ ") || strings.ContainsAny(group, "/_ ") || (ok && group == "" && strings.Contains(s, "/")) {
		return "", fmt.Errorf("%q: want group_Kind, or Kind for the core group", s)
	}
	if group == "" {
		return kind, nil
	}
	return group + "/" + kind, nil
}
