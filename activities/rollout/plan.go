package rollout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// PlanInput names a set's apps.
type PlanInput struct {
	Apps []AppRef `json:"apps"`
	// Set, when named, lets Plan read the apps in one list of the set's
	// apps; an app the list does not show yet is read on its own.
	Set string `json:"set,omitempty"`
}

// PlannedApp is what a set's rollout needs of one app.
type PlannedApp struct {
	Project string            `json:"project"`
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels,omitempty"`
	Sync    string            `json:"sync"`
	// SHA is the revision the app last compared ("" before its first).
	SHA string `json:"sha,omitempty"`
}

// PlanOutput reads the apps, sorted by project and name; apps that no
// longer run are left out.
type PlanOutput struct {
	Apps []PlannedApp `json:"apps"`
	// Revisions is a digest of every app's compared revision: it moves
	// when a commit reaches any app.
	Revisions string `json:"revisions"`
	// OutOfSync counts the apps that are not Synced.
	OutOfSync int `json:"outOfSync"`
	// Uncompared counts the apps with no compared revision yet.
	Uncompared int `json:"uncompared"`
}

// Plan reads the set's apps for its rollout: their labels, sync status
// and compared revision; with in.Set, from one list rather than a read
// of each app.
func (a *Activities) Plan(ctx context.Context, in PlanInput) (PlanOutput, error) {
	refs := slices.Clone(in.Apps)
	slices.SortFunc(refs, func(x, y AppRef) int {
		if c := strings.Compare(x.Project, y.Project); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	var listed map[AppRef]AppState
	if in.Set != "" {
		var err error
		if listed, err = a.apps.SetApps(ctx, in.Set); err != nil {
			return PlanOutput{}, fmt.Errorf("list the apps of set %s: %w", in.Set, err)
		}
	}
	out := PlanOutput{Apps: make([]PlannedApp, 0, len(refs))}
	h := sha256.New()
	for _, r := range refs {
		st, ok := listed[r]
		if !ok {
			var err error
			if st, ok, err = a.apps.State(ctx, r.Project, r.Name); err != nil {
				return PlanOutput{}, fmt.Errorf("read %s: %w", r, err)
			}
		}
		if !ok {
			continue
		}
		out.Apps = append(out.Apps, PlannedApp{Project: r.Project, Name: r.Name, Labels: st.Labels, Sync: string(st.Sync), SHA: st.SHA})
		if st.Sync != appspec.SyncSynced {
			out.OutOfSync++
		}
		if st.SHA == "" {
			out.Uncompared++
		}
		fmt.Fprintf(h, "%s@%s\n", r, st.SHA)
		activity.RecordHeartbeat(ctx, r.String())
	}
	out.Revisions = hex.EncodeToString(h.Sum(nil))[:12]
	return out, nil
}
