package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/windlass-cd/windlass/workflows"
)

// rolloutActions are the words of appset rollout.
var rolloutActions = []string{"status", workflows.UpdateRolloutPause, workflows.UpdateRolloutResume, workflows.UpdateRolloutAbort}

// appsetRollout reads or steers a set's progressive rollout.
func (c *cli) appsetRollout(ctx context.Context, args []string) error {
	const synopsis = "status|pause|resume|abort NAME"
	f := c.flags("appset rollout", synopsis).withOutput()
	reason := f.String("reason", "", "why (pause, resume, abort), recorded in the rollout's message")
	pos, s, err := f.start(args, 2)
	if err != nil {
		return err
	}
	action, name := pos[0], pos[1]
	path := "/api/v1/applicationsets/" + url.PathEscape(name) + "/rollout"
	var st workflows.RolloutStatus
	var raw []byte
	switch action {
	case "status":
		raw, err = s.api.json(ctx, http.MethodGet, path, nil, nil, &st)
	case workflows.UpdateRolloutPause, workflows.UpdateRolloutResume, workflows.UpdateRolloutAbort:
		raw, err = s.api.json(ctx, http.MethodPost, path+"/"+action, nil, map[string]string{"reason": *reason}, &st)
	default:
		return f.usageError("%q: want %s", action, strings.Join(rolloutActions, ", "))
	}
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) { printRollout(w, st) })
}

// printRollout prints the rollout's phase, then one line per app by step.
func printRollout(w io.Writer, st workflows.RolloutStatus) {
	fmt.Fprintf(w, "Set:      %s\nTarget:   %s\nPhase:    %s\n", st.Set, st.Target, st.Phase)
	if st.Message != "" {
		fmt.Fprintf(w, "Message:  %s\n", st.Message)
	}
	if len(st.Steps) > 0 {
		fmt.Fprintf(w, "Step:     %d/%d\n", min(st.Step+1, len(st.Steps)), len(st.Steps))
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "STEP\tSTEP PHASE\tAPP\tPHASE\tSYNC\tMESSAGE")
	for i, step := range st.Steps {
		if len(step.Apps) == 0 {
			fmt.Fprintf(tw, "%d\t%s\t-\t\t\t\n", i+1, step.Phase)
		}
		for _, a := range step.Apps {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, step.Phase, a.Ref(), a.Phase, a.SyncID, a.Message)
		}
	}
	for _, a := range st.Unmatched {
		fmt.Fprintf(tw, "-\t\t%s\tnot in any step\t\t\n", a)
	}
	tw.Flush()
}
