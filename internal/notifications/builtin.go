package notifications

import "fmt"

// builtinMessages are the messages of the built-in triggers' templates.
var builtinMessages = map[string]struct{ subject, message string }{
	TriggerCreated: {"{{.app.metadata.name}} was created",
		"Application {{.app.metadata.name}} was created in project {{.app.spec.project}}."},
	TriggerDeleted: {"{{.app.metadata.name}} was deleted",
		"Application {{.app.metadata.name}} was deleted."},
	TriggerDeployed: {"{{.app.metadata.name}} deployed {{.app.status.sync.revision}}",
		"Application {{.app.metadata.name}} is now running revision {{.app.status.sync.revision}} and is healthy."},
	TriggerHealthDegraded: {"{{.app.metadata.name}} is degraded",
		"Application {{.app.metadata.name}} is Degraded. {{.app.status.health.message}}"},
	TriggerSyncFailed: {"{{.app.metadata.name}} sync failed",
		"The sync of {{.app.metadata.name}} failed at {{.app.status.operationState.finishedAt}}: {{.app.status.operationState.message}}"},
	TriggerSyncRunning: {"{{.app.metadata.name}} sync started",
		"A sync of {{.app.metadata.name}} started at {{.app.status.operationState.startedAt}}."},
	TriggerSyncStatusUnknown: {"{{.app.metadata.name}} sync status is Unknown",
		"The sync status of {{.app.metadata.name}} is Unknown. {{.app.status.health.message}}"},
	TriggerSyncSucceeded: {"{{.app.metadata.name}} synced",
		"Application {{.app.metadata.name}} synced revision {{.app.status.operationState.syncResult.revision}}."},
}

// addBuiltinTemplates adds each built-in trigger's template unless the
// configuration defines one of the same name.
func (c *Config) addBuiltinTemplates() {
	for _, trig := range sortedKeys(builtinMessages) {
		name := BuiltinTemplate(trig)
		if _, ok := c.Templates[name]; ok {
			continue
		}
		m := builtinMessages[trig]
		t := &Template{Message: m.message, Title: m.subject, Email: &EmailTemplate{Subject: m.subject}}
		if err := t.compile(name); err != nil {
			panic(fmt.Sprintf("built-in template %s: %v", name, err))
		}
		c.Templates[name] = t
	}
}
