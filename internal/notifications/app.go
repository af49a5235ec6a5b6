package notifications

import "time"

// App is the part of an application that triggers and templates see. The
// app workflow builds it from its state; View gives it Argo CD's shape
// (app.metadata, app.spec, app.status) so that imported conditions and
// templates read the same fields.
type App struct {
	Name        string            `json:"name"`
	Project     string            `json:"project"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	CreatedAt   time.Time         `json:"createdAt,omitzero"`
	Deleting    bool              `json:"deleting,omitempty"`
	DeletedAt   time.Time         `json:"deletedAt,omitzero"`

	RepoURL        string `json:"repoURL,omitempty"`
	Path           string `json:"path,omitempty"`
	Chart          string `json:"chart,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	DestServer     string `json:"destServer,omitempty"`
	DestName       string `json:"destName,omitempty"`
	DestNamespace  string `json:"destNamespace,omitempty"`

	Sync     string `json:"sync"`
	Health   string `json:"health"`
	Revision string `json:"revision,omitempty"`
	Message  string `json:"message,omitempty"`
	// Operation is the last sync, running or finished.
	Operation *Operation `json:"operation,omitempty"`
}

// Operation is a sync as triggers see it.
type Operation struct {
	ID         string    `json:"id"`
	Phase      string    `json:"phase"`
	Message    string    `json:"message,omitempty"`
	Revision   string    `json:"revision,omitempty"`
	Initiator  string    `json:"initiator,omitempty"`
	Automated  bool      `json:"automated,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// rfc3339 formats a time as Argo CD's API does, "" for the zero time.
func rfc3339(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// View returns the app as a tree of maps in Argo CD's Application shape.
func (a App) View() map[string]any {
	meta := map[string]any{
		"name":              a.Name,
		"namespace":         a.Namespace,
		"labels":            stringMap(a.Labels),
		"annotations":       stringMap(a.Annotations),
		"creationTimestamp": rfc3339(a.CreatedAt),
		"deletionTimestamp": nil,
	}
	if a.Deleting {
		meta["deletionTimestamp"] = rfc3339(a.DeletedAt)
		if a.DeletedAt.IsZero() {
			meta["deletionTimestamp"] = "deleting"
		}
	}
	status := map[string]any{
		"sync":   map[string]any{"status": a.Sync, "revision": a.Revision},
		"health": map[string]any{"status": a.Health, "message": a.Message},
	}
	if op := a.Operation; op != nil {
		status["operationState"] = map[string]any{
			"phase":      op.Phase,
			"message":    op.Message,
			"startedAt":  rfc3339(op.StartedAt),
			"finishedAt": rfc3339(op.FinishedAt),
			"syncResult": map[string]any{"revision": op.Revision},
			"operation": map[string]any{
				"initiatedBy": map[string]any{"username": op.Initiator, "automated": op.Automated},
			},
		}
	} else {
		status["operationState"] = nil
	}
	return map[string]any{
		"metadata": meta,
		"spec": map[string]any{
			"project": a.Project,
			"source": map[string]any{
				"repoURL": a.RepoURL, "path": a.Path, "chart": a.Chart, "targetRevision": a.TargetRevision,
			},
			"destination": map[string]any{"server": a.DestServer, "name": a.DestName, "namespace": a.DestNamespace},
		},
		"status": status,
	}
}
