package appspec

// OrphanedResources turns on the search for orphaned resources: objects
// in an app's namespaces that no app tracks. Warn makes finding any a
// warning in the app's status; Ignore leaves matching objects out.
type OrphanedResources struct {
	Warn   bool                  `json:"warn,omitempty"`
	Ignore []OrphanedResourceKey `json:"ignore,omitempty"`
}

// OrphanedResourceKey matches objects by group, kind and name globs. An
// empty group is the core group; an empty kind or name matches any.
type OrphanedResourceKey struct {
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Name  string `json:"name,omitempty"`
}

// Ignores says whether an ignore entry matches the object.
func (o OrphanedResources) Ignores(group, kind, name string) bool {
	for _, k := range o.Ignore {
		if glob(k.Group, group) && glob(orStar(k.Kind), kind) && glob(orStar(k.Name), name) {
			return true
		}
	}
	return false
}
