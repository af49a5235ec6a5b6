package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// progress shows a changing status on stderr: on a terminal one line
// rewritten in place, else a line each time the status changes.
type progress struct {
	w    io.Writer
	tty  bool
	last string
}

func (c *cli) progress() *progress {
	return &progress{w: c.stderr, tty: c.terminal(c.stderr)}
}

func (p *progress) show(line string) {
	if line == p.last {
		return
	}
	p.last = line
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// end ends the status line on a terminal.
func (p *progress) end() {
	if p.tty && p.last != "" {
		fmt.Fprintln(p.w)
	}
}

// operationLine describes an operation: "Running: Sync wave 2 (3/5),
// 1/4 resources".
func operationLine(op *workflows.Operation) string {
	s := op.Phase
	if len(op.WaitingFor) > 0 {
		waits := make([]string, 0, len(op.WaitingFor))
		for _, w := range op.WaitingFor {
			waits = append(waits, w.App.String()+" ("+w.Reason+")")
		}
		s += ": waiting for " + strings.Join(waits, ", ")
	}
	if st := op.Step; st != nil {
		done := 0
		for _, r := range op.Resources {
			if r.Phase == st.Phase && r.Wave == st.Wave {
				done++
			}
		}
		s += fmt.Sprintf(": %s wave %d (%d/%d), %d/%d resources", st.Phase, st.Wave, op.StepIndex+1, op.Steps, done, st.Resources)
	}
	if n := len(op.AwaitingApproval); n > 0 {
		s += fmt.Sprintf(", pruning of %s awaits approval (windlass app confirm-deletion)", plural(n, "resource"))
	}
	return s
}

// timedOut is the error of a wait that ran out of time.
func timedOut(timeout time.Duration, format string, a ...any) error {
	return cmdline.WithCode(cmdline.ExitTimeout, fmt.Errorf("timed out after %s %s", timeout, fmt.Sprintf(format, a...)))
}

// operate starts a sync or rollback (action) of the application name and,
// unless --async, waits for its result while it shows the progress.
func (c *cli) operate(ctx context.Context, f *flags, s *session, name, action string, q url.Values, req any, op operationFlags) error {
	path := appPath(name) + "/" + action
	if *op.async {
		q.Set("wait", "false")
		var acc workflows.SyncAccepted
		raw, err := s.api.json(ctx, http.MethodPost, path, q, req, &acc)
		if err != nil {
			return err
		}
		return f.print(raw, func(w io.Writer) {
			if len(acc.WaitingFor) > 0 {
				fmt.Fprintf(w, "%s %s %s\n", action, acc.ID, operationLine(&workflows.Operation{Phase: "accepted", WaitingFor: acc.WaitingFor}))
				return
			}
			fmt.Fprintf(w, "%s %s started\n", action, acc.ID)
		})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if *op.timeout > 0 {
		waitCtx, cancel = context.WithTimeout(ctx, *op.timeout)
	}
	defer cancel()
	type answer struct {
		status int
		raw    []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		st, raw, err := s.api.send(waitCtx, call{method: http.MethodPost, path: path, query: q, body: body, contentType: "application/json", long: true})
		done <- answer{st, raw, err}
	}()
	p := c.progress()
	poll := func() {
		var cur *workflows.Operation
		if _, err := s.api.json(waitCtx, http.MethodGet, appPath(name)+"/operation", q, nil, &cur); err != nil {
			return // progress is a hint; the answer to the POST is the result
		}
		if cur == nil || cur.SyncID == "" { // no operation: null, or a zero operation
			p.show(fmt.Sprintf("%s: waiting for the %s to start", name, action))
			return
		}
		p.show(cur.SyncID + ": " + operationLine(cur))
	}
	poll()
	tick := time.NewTicker(c.poll)
	defer tick.Stop()
	for {
		select {
		case a := <-done:
			p.end()
			if a.err != nil && waitCtx.Err() != nil && ctx.Err() == nil {
				return timedOut(*op.timeout, "waiting for the %s of %s; it goes on (windlass app wait %s --operation)", action, name, name)
			}
			return c.operationResult(f, action, a.status, a.raw, a.err)
		case <-tick.C:
			poll()
		}
	}
}

// operationResult prints the result of a sync or rollback: 200 with a
// SyncResult that succeeded, 409 with one that did not (or a problem).
func (c *cli) operationResult(f *flags, action string, status int, raw []byte, err error) error {
	var res workflows.SyncResult
	isResult := json.Unmarshal(raw, &res) == nil && res.ID != "" && res.Phase != ""
	if err != nil && !(status == http.StatusConflict && isResult) {
		return err
	}
	if !isResult {
		return fmt.Errorf("%s: unexpected answer: %s", action, firstLine(string(raw), 200))
	}
	if perr := f.print(raw, func(w io.Writer) { printSyncResult(w, res) }); perr != nil {
		return perr
	}
	if res.Phase != workflows.PhaseSucceeded {
		msg := fmt.Sprintf("%s %s ended %s", action, res.ID, res.Phase)
		if res.Message != "" {
			msg += ": " + res.Message
		}
		return cmdline.WithCode(cmdline.ExitFailed, errors.New(msg))
	}
	return nil
}

func printSyncResult(w io.Writer, r workflows.SyncResult) {
	failed := ""
	if r.Failed != nil {
		failed = r.Failed.String()
	}
	attempts := ""
	if r.Attempts > 1 {
		attempts = strconv.Itoa(r.Attempts)
	}
	prune := ""
	if r.Prune {
		prune = "yes"
	}
	details(w, "Sync", r.ID, "Phase", r.Phase, "Revision", revision(r.Revision, r.SHA),
		"Initiator", r.Initiator, "Prune", prune, "Attempts", attempts,
		"Started", fmtTime(r.StartedAt), "Finished", fmtTime(r.FinishedAt), "Health", string(r.Health),
		"Message", r.Message, "Failed", failed)
	if len(r.Resources) > 0 {
		fmt.Fprintln(w)
		resultTable(w, r.Resources)
	}
}

// resultTable lists what happened to each resource.
func resultTable(w io.Writer, res []cluster.ResourceResult) {
	table(w, "PHASE\tWAVE\tGROUP\tKIND\tNAMESPACE\tNAME\tACTION\tHEALTH\tMESSAGE", res, func(r cluster.ResourceResult) []string {
		kind := r.Kind
		if r.Hook {
			kind += " (hook)"
		}
		return []string{orDash(r.Phase), strconv.Itoa(r.Wave), r.Group, kind, r.Namespace, r.Name, string(r.Action), string(r.Health), r.Message}
	})
}

func (c *cli) appWait(ctx context.Context, args []string) error {
	f := c.flags("app wait", "[NAME...] [-l SELECTOR]")
	healthy := f.Bool("health", false, "wait until the application is Healthy")
	degraded := f.Bool("degraded", false, "wait until the application is Degraded")
	suspended := f.Bool("suspended", false, "wait until the application is Suspended")
	synced := f.Bool("sync", false, "wait until the application is Synced")
	operation := f.Bool("operation", false, "wait until no operation runs")
	timeout := f.Duration("timeout", 5*time.Minute, "give up after this long, for all the applications (exit code 6)")
	selector := f.withSelector()
	pos, q, s, err := f.appVerb(args, anyArgs)
	if err != nil {
		return err
	}
	if *timeout <= 0 {
		return f.usageError("--timeout must be positive")
	}
	// The health states waited for: any one of them will do.
	var health []appspec.HealthStatus
	for _, h := range []struct {
		on    bool
		state appspec.HealthStatus
	}{{*healthy, appspec.HealthHealthy}, {*degraded, appspec.HealthDegraded}, {*suspended, appspec.HealthSuspended}} {
		if h.on {
			health = append(health, h.state)
		}
	}
	if len(health) == 0 && !*synced && !*operation {
		health, *synced, *operation = []appspec.HealthStatus{appspec.HealthHealthy}, true, true
	}
	met := func(st workflows.AppStatus) bool {
		return (len(health) == 0 || slices.Contains(health, st.Health)) && (!*synced || st.Sync == appspec.SyncSynced) &&
			(!*operation || st.Operation == nil)
	}
	waitCtx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	targets, err := c.targets(waitCtx, f, s, q, pos, *selector)
	if err != nil {
		return err
	}
	return c.eachTarget(targets, func(t target) error {
		p := c.progress()
		st, state, err := c.pollApp(waitCtx, s, t.name, t.q, p, met)
		p.end()
		switch {
		case err != nil && waitCtx.Err() != nil && ctx.Err() == nil:
			return timedOut(*timeout, "waiting for %s (%s)", t.name, state)
		case err != nil:
			return err
		}
		fmt.Fprintf(c.stdout, "application %s: %s\n", t.name, strings.Join(waitedFor(*synced, len(health) > 0, *operation, st), ", "))
		return nil
	})
}

// pollApp gets the application until met says its status is the one
// waited for, showing the status as it changes. It returns the status, and
// its description ("no answer yet" before the first answer).
func (c *cli) pollApp(ctx context.Context, s *session, name string, q url.Values, p *progress, met func(workflows.AppStatus) bool) (workflows.AppStatus, string, error) {
	state := "no answer yet"
	for {
		var view workflows.AppView
		if _, err := s.api.json(ctx, http.MethodGet, appPath(name), q, nil, &view); err != nil {
			return view.Status, state, err
		}
		st := view.Status
		state = fmt.Sprintf("sync %s, health %s", orDash(string(st.Sync)), orDash(string(st.Health)))
		if st.Operation != nil {
			state += ", operation " + st.Operation.SyncID + " " + operationLine(st.Operation)
		}
		p.show(name + ": " + state)
		if met(st) {
			return st, state, nil
		}
		select {
		case <-ctx.Done():
			return st, state, ctx.Err()
		case <-time.After(c.poll):
		}
	}
}

// waitedFor describes the conditions met.
func waitedFor(synced, health, operation bool, st workflows.AppStatus) []string {
	var out []string
	if synced {
		out = append(out, "sync "+string(st.Sync))
	}
	if health {
		out = append(out, "health "+string(st.Health))
	}
	if operation {
		out = append(out, "no operation running")
	}
	return out
}
