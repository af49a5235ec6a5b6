package migrate

import (
	"fmt"
	"slices"
	"strings"

	luaparse "github.com/yuin/gopher-lua/parse"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/api/auth"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/manifest"
)

// argocd-cm keys.
const (
	keyTracking          = "application.resourceTrackingMethod"
	keyInstanceLabel     = "application.instanceLabelKey"
	keyInstallationID    = "installationID"
	keyCustomizations    = "resource.customizations"
	prefixHealth         = "resource.customizations.health."
	prefixActions        = "resource.customizations.actions."
	prefixIgnoreDiff     = "resource.customizations.ignoreDifferences."
	prefixAccounts       = "accounts."
	keyReconciliation    = "timeout.reconciliation"
	keyKustomizeOptions  = "kustomize.buildOptions"
	defaultInstanceLabel = "app.kubernetes.io/instance"
	// defaultTracking is Argo CD 3's default resourceTrackingMethod.
	defaultTracking = "annotation"
	// customizationsDir is the --resource-customizations tree under OutDir.
	customizationsDir = "resource-customizations"
	authConfigFile    = "auth-config.yaml"
	// argoCDCMFile is the workers' --argocd-cm under OutDir: the keys
	// the worker reads from it and nothing else migrates.
	argoCDCMFile = "argocd-cm.yaml"
)

// argoCDCMKeys are the argocd-cm keys that go into argoCDCMFile as they are.
var argoCDCMKeys = []string{"resource.exclusions", "resource.inclusions"}

// ignoredPrefixes are argocd-cm customizations that change nothing
// Windlass does, with why.
var ignoredPrefixes = []struct{ prefix, why string }{
	{"resource.customizations.useOpenLibs.", "Windlass's health scripts never get the open libraries"},
	{"resource.customizations.knownTypeFields.", "not needed: Windlass diffs with the live object's schema"},
	{"resource.customizations.ignoreResourceUpdates.", "not needed: Windlass does not watch every resource"},
}

// appConfig is what argocd-cm changes on every migrated app, and its
// local accounts.
type appConfig struct {
	// annotations are the Argo CD tracking annotations of every app
	// (manifest.AppAnnotationArgo*).
	annotations       map[string]string
	tracking          string
	ignoreDifferences []appspec.ResourceIgnoreDifferences
	accounts          []account
}

// account is a local account of the API's --auth-config.
type account struct {
	Name         string   `json:"name"`
	Enabled      bool     `json:"enabled"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// argoDiffRule is the value of an ignoreDifferences customization.
type argoDiffRule struct {
	JSONPointers          []string `json:"jsonPointers"`
	JQPathExpressions     []string `json:"jqPathExpressions"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers"`
}

// splitGroupKind reads argocd-cm's "group_Kind" ("Kind" for the core
// group) or resource.customizations' "group/Kind".
func splitGroupKind(s string) (group, kind string) {
	if g, k, ok := strings.Cut(s, "/"); ok {
		return g, k
	}
	if g, k, ok := strings.Cut(s, "_"); ok {
		return g, k
	}
	return "", s
}

func groupKindName(group, kind string) string {
	if group == "" {
		return kind
	}
	return group + "/" + kind
}

// settings plans argocd-cm: tracking, health checks, ignoreDifferences
// and what has no equivalent. It returns what every app gets.
func (b *builder) settings() appConfig {
	cfg := appConfig{tracking: defaultTracking}
	cm := b.src.Settings
	if cm == nil {
		cfg.annotations = trackingAnnotations(cm, cfg.tracking)
		return cfg
	}
	name := func(key string) string { return ConfigMapName + " " + key }
	method := cm[keyTracking]
	switch method {
	case "":
		b.plan.add("Setting", name(keyTracking), ActionSkip, fmt.Sprintf("unset: Argo CD's default %s; every app gets %s=%s", defaultTracking, TrackingAnnotation, defaultTracking), nil)
	case "annotation", "label", "annotation+label":
		cfg.tracking = method
		b.plan.add("Setting", name(keyTracking), ActionSkip, fmt.Sprintf("every app gets %s=%s", TrackingAnnotation, method), nil)
	default:
		b.plan.add("Setting", name(keyTracking), ActionRefuse, fmt.Sprintf("unknown tracking method %q: want annotation, label or annotation+label; apps get %s", method, defaultTracking), nil)
	}
	if key := cm[keyInstanceLabel]; key != "" && key != defaultInstanceLabel {
		switch {
		case len(validation.IsQualifiedName(key)) > 0:
			b.plan.add("Setting", name(keyInstanceLabel), ActionRefuse, fmt.Sprintf("%q is not a label key; apps are tracked by %s", key, defaultInstanceLabel), nil)
		case strings.Contains(cfg.tracking, "label"):
			b.plan.add("Setting", name(keyInstanceLabel), ActionSkip, fmt.Sprintf("every app gets %s=%s", manifest.AppAnnotationArgoInstanceLabelKey, key), nil)
		default:
			b.plan.add("Setting", name(keyInstanceLabel), ActionSkip, "unused: tracking is by annotation", nil)
		}
	}
	if id := cm[keyInstallationID]; id != "" {
		b.plan.add("Setting", name(keyInstallationID), ActionSkip, fmt.Sprintf("every app gets %s=%s", manifest.AppAnnotationArgoInstallationID, id), nil)
	}

	health := map[string]string{}  // group/Kind: script
	actions := map[string]string{} // group/Kind: actions YAML
	diffs := map[string]string{}   // group/Kind or "all": rule YAML
	accounts := map[string]*account{}
	workerCM := map[string]string{} // keys for argoCDCMFile
	var other []string
	for _, k := range sortedKeys(cm) {
		v := cm[k]
		switch {
		case k == keyTracking || k == keyInstanceLabel || k == keyInstallationID:
		case slices.Contains(argoCDCMKeys, k):
			workerCM[k] = v
		case strings.HasPrefix(k, prefixHealth):
			g, kind := splitGroupKind(strings.TrimPrefix(k, prefixHealth))
			health[groupKindName(g, kind)] = v
		case strings.HasPrefix(k, prefixActions):
			actions[groupKindName(splitGroupKind(strings.TrimPrefix(k, prefixActions)))] = v
		case strings.HasPrefix(k, prefixIgnoreDiff):
			rest := strings.TrimPrefix(k, prefixIgnoreDiff)
			if rest != "all" {
				rest = groupKindName(splitGroupKind(rest))
			}
			diffs[rest] = v
		case k == keyCustomizations:
			b.legacyCustomizations(v, health, actions, diffs)
		case strings.HasPrefix(k, prefixAccounts):
			acct, enabled := strings.TrimPrefix(k, prefixAccounts), false
			if n, ok := strings.CutSuffix(acct, ".enabled"); ok {
				acct, enabled = n, true
			}
			a := accounts[acct]
			if a == nil {
				a = &account{Name: acct, Enabled: true}
				accounts[acct] = a
			}
			if enabled {
				a.Enabled = strings.TrimSpace(v) != "false"
			} else {
				for _, c := range strings.Split(v, ",") {
					if c = strings.TrimSpace(c); c != "" {
						a.Capabilities = append(a.Capabilities, c)
					}
				}
			}
		case k == keyReconciliation:
			b.plan.add("Setting", name(k), ActionSkip, "start workers with --refresh-seconds (the default is 180)", nil)
		case k == keyKustomizeOptions:
			if o, err := render.ParseKustomizeBuildOptions(v); err != nil {
				b.plan.add("Setting", name(k), ActionRefuse, err.Error(), nil)
			} else {
				b.plan.add("Setting", name(k), ActionSkip, fmt.Sprintf("start workers with --kustomize-build-options %q", o.String()), nil)
			}
		default:
			if i := slices.IndexFunc(ignoredPrefixes, func(p struct{ prefix, why string }) bool { return strings.HasPrefix(k, p.prefix) }); i >= 0 {
				b.plan.add("Setting", name(k), ActionSkip, ignoredPrefixes[i].why, nil)
				continue
			}
			other = append(other, k)
		}
	}

	for _, gk := range sortedKeys(health) {
		b.healthRow(gk, health[gk])
	}
	for _, gk := range sortedKeys(actions) {
		b.actionRows(gk, actions[gk])
	}
	b.argoCDCMRow(workerCM)
	for _, gk := range sortedKeys(diffs) {
		var rule argoDiffRule
		if err := yaml.UnmarshalStrict([]byte(diffs[gk]), &rule); err != nil {
			b.plan.add("IgnoreDifferences", gk, ActionRefuse, "does not parse: "+err.Error(), nil)
			continue
		}
		group, kind := "*", "*"
		if gk != "all" {
			group, kind = splitGroupKind(gk)
		}
		cfg.ignoreDifferences = append(cfg.ignoreDifferences, appspec.ResourceIgnoreDifferences{
			Group: group, Kind: kind, JSONPointers: rule.JSONPointers, JQPathExpressions: rule.JQPathExpressions,
			ManagedFieldsManagers: rule.ManagedFieldsManagers})
		b.plan.add("IgnoreDifferences", gk, ActionSkip, "system-wide in Argo CD: added to every migrated app's ignoreDifferences", nil)
	}
	if len(other) > 0 {
		b.plan.add("Setting", ConfigMapName, ActionSkip, "not migrated: "+strings.Join(other, ", "), nil)
	}
	cfg.annotations = trackingAnnotations(cm, cfg.tracking)
	for _, n := range sortedKeys(accounts) {
		a := accounts[n]
		switch {
		case len(validation.IsDNS1123Label(n)) > 0:
			b.plan.add("Account", n, ActionRefuse, "Windlass account names are DNS-1123 labels: lower case letters, digits and '-'", nil)
		case slices.ContainsFunc(a.Capabilities, func(c string) bool { return c != auth.CapabilityLogin && c != auth.CapabilityAPIKey }):
			b.plan.add("Account", n, ActionRefuse, fmt.Sprintf("capabilities %s: want login and/or apiKey", strings.Join(a.Capabilities, ", ")), nil)
		case slices.Contains(a.Capabilities, auth.CapabilityLogin):
			cfg.accounts = append(cfg.accounts, *a)
			b.plan.add("Account", n, ActionSkip, fmt.Sprintf("goes into %s; its password stays in argocd-secret: set one with `windlass account update-password --account %s`", authConfigFile, n), nil)
		default:
			cfg.accounts = append(cfg.accounts, *a)
			b.plan.add("Account", n, ActionSkip, fmt.Sprintf("goes into %s; its tokens stay in Argo CD: mint new ones with `windlass account generate-token --account %s`", authConfigFile, n), nil)
		}
	}
	return cfg
}

// trackingAnnotations are the annotations that make every migrated app
// recognise the objects Argo CD tracked for it (manifest.ArgoTrackingOf).
func trackingAnnotations(cm map[string]string, tracking string) map[string]string {
	out := map[string]string{manifest.AppAnnotationArgoTracking: tracking}
	if key := cm[keyInstanceLabel]; key != "" && key != defaultInstanceLabel && strings.Contains(tracking, "label") &&
		len(validation.IsQualifiedName(key)) == 0 {
		out[manifest.AppAnnotationArgoInstanceLabelKey] = key
	}
	if id := cm[keyInstallationID]; id != "" {
		out[manifest.AppAnnotationArgoInstallationID] = id
	}
	return out
}

// legacyCustomizations reads the single-key resource.customizations form:
// "group/Kind": {health.lua, ignoreDifferences, actions, ...}.
func (b *builder) legacyCustomizations(v string, health, actions, diffs map[string]string) {
	var m map[string]map[string]any
	if err := yaml.Unmarshal([]byte(v), &m); err != nil {
		b.plan.add("Setting", ConfigMapName+" "+keyCustomizations, ActionRefuse, "does not parse: "+err.Error(), nil)
		return
	}
	for _, gk := range sortedKeys(m) {
		for _, field := range sortedKeys(m[gk]) {
			s, ok := m[gk][field].(string)
			if !ok {
				// ignoreDifferences written as a map rather than a string.
				b, _ := yaml.Marshal(m[gk][field])
				s = string(b)
			}
			switch field {
			case "health.lua":
				health[groupKindName(splitGroupKind(gk))] = s
			case "ignoreDifferences":
				diffs[groupKindName(splitGroupKind(gk))] = s
			case "actions":
				actions[groupKindName(splitGroupKind(gk))] = s
			default:
				b.plan.add("Setting", ConfigMapName+" "+keyCustomizations+" "+gk+" "+field, ActionSkip, "not migrated", nil)
			}
		}
	}
}

// healthRow plans a Lua health check as a file of the
// --resource-customizations tree ("_" stands for Argo CD's "*").
func (b *builder) healthRow(gk, script string) {
	if _, err := luaparse.Parse(strings.NewReader(script), gk); err != nil {
		b.plan.add("HealthCheck", gk, ActionRefuse, "the Lua script does not compile: "+err.Error(), nil)
		return
	}
	rel := customizationsDir + "/" + strings.ReplaceAll(gk, "*", "_") + "/health.lua"
	b.fileRow("HealthCheck", gk, rel, []byte(script), "run workers with --resource-customizations "+joinOut(b.opts.OutDir, customizationsDir))
}

// actionRows plans a kind's Lua actions as files of the
// --resource-customizations tree: actions/discovery.lua and
// actions/<name>/action.lua.
func (b *builder) actionRows(gk, value string) {
	a, err := customizations.ParseActions(value)
	if err != nil {
		b.plan.add("Action", gk, ActionRefuse, "does not parse: "+err.Error(), nil)
		return
	}
	scripts := map[string]string{"discovery.lua": a.Discovery}
	for name, script := range a.Actions {
		scripts[name+"/action.lua"] = script
	}
	if len(a.Actions) == 0 && a.Discovery == "" {
		b.plan.add("Action", gk, ActionSkip, "no scripts", nil)
		return
	}
	for _, rel := range sortedKeys(scripts) {
		if scripts[rel] == "" {
			continue
		}
		if _, err := luaparse.Parse(strings.NewReader(scripts[rel]), gk+" "+rel); err != nil {
			b.plan.add("Action", gk+" "+rel, ActionRefuse, "the Lua script does not compile: "+err.Error(), nil)
			continue
		}
		path := customizationsDir + "/" + strings.ReplaceAll(gk, "*", "_") + "/actions/" + rel
		b.fileRow("Action", gk+" "+rel, path, []byte(scripts[rel]), "run workers with --resource-customizations "+joinOut(b.opts.OutDir, customizationsDir))
	}
}

// argoCDCMRow writes the keys the workers read from --argocd-cm, when
// they parse as the worker would read them.
func (b *builder) argoCDCMRow(keys map[string]string) {
	if len(keys) == 0 {
		return
	}
	names := strings.Join(sortedKeys(keys), ", ")
	data, err := yaml.Marshal(keys)
	if err == nil {
		_, err = customizations.ParseConfigMap(data)
	}
	if err != nil {
		b.plan.add("Setting", ConfigMapName+" "+names, ActionRefuse, "does not parse: "+err.Error(), nil)
		return
	}
	b.fileRow("Setting", ConfigMapName+" "+names, argoCDCMFile, data, "run workers with --argocd-cm "+joinOut(b.opts.OutDir, argoCDCMFile))
}

func joinOut(dir, rel string) string {
	if dir == "" {
		return rel
	}
	return strings.TrimSuffix(dir, "/") + "/" + rel
}

// authConfig is the part of the API's --auth-config that argocd-rbac-cm
// fills.
type authConfig struct {
	Accounts        []account `json:"accounts,omitempty"`
	Policy          string    `json:"policy,omitempty"`
	PolicyDefault   string    `json:"policyDefault,omitempty"`
	PolicyMatchMode string    `json:"policyMatchMode,omitempty"`
}

// rbac plans argocd-rbac-cm as an --auth-config file, after checking
// that Windlass's RBAC accepts it.
func (b *builder) rbac(cfg appConfig) error {
	cm := b.src.RBAC
	if cm == nil && len(cfg.accounts) == 0 {
		return nil
	}
	// policy.csv, then the overlays policy.<name>.csv in name order, as
	// Argo CD concatenates them.
	policy := cm["policy.csv"]
	for _, k := range sortedKeys(cm) {
		if k != "policy.csv" && strings.HasPrefix(k, "policy.") && strings.HasSuffix(k, ".csv") {
			policy = strings.TrimRight(policy, "\n") + "\n" + cm[k]
		}
	}
	ac := authConfig{Accounts: cfg.accounts, Policy: strings.TrimLeft(policy, "\n"), PolicyDefault: cm["policy.default"], PolicyMatchMode: cm["policy.matchMode"]}
	if _, err := rbac.New(rbac.Config{PolicyCSV: ac.Policy, DefaultRole: ac.PolicyDefault, MatchMode: ac.PolicyMatchMode}, nil); err != nil {
		b.plan.add("RBAC", RBACConfigMapName, ActionRefuse, "Windlass's RBAC refuses it: "+err.Error(), nil)
		return nil
	}
	data, err := yaml.Marshal(ac)
	if err != nil {
		return err
	}
	reason := "pass it to the API as --auth-config (merged with any accounts and SSO it has)"
	if s := strings.TrimSpace(cm["scopes"]); s != "" && s != "[groups]" {
		reason += fmt.Sprintf("; scopes %s: Windlass takes groups from one claim, sso.groupsClaim", s)
	}
	if cm == nil {
		b.fileRow("Setting", ConfigMapName+" accounts", authConfigFile, data, reason)
		return nil
	}
	b.fileRow("RBAC", RBACConfigMapName, authConfigFile, data, reason)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
