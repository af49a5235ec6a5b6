package reconcile

import (
	"bytes"
	"encoding/json"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// Step is one step of a reconcile pass. The steps run in this order.
type Step int

// The steps of a pass, then StepDone.
const (
	StepProject Step = iota // read the project and check the app against it
	StepResolve             // resolve every source's revision
	StepRender              // render the sources at their revisions
	StepCompare             // compare the manifests with the live state
	StepDone
)

// String names the step as the app's status message does.
func (s Step) String() string {
	switch s {
	case StepProject:
		return "project"
	case StepResolve:
		return "resolve revision"
	case StepRender:
		return "render"
	case StepCompare:
		return "compare"
	}
	return "done"
}

// Steps reaches the capabilities a pass's steps use: directly in the
// quick pass, by activities in the workflow. A method that cannot run its
// step where it is called returns an error, and the pass stops there.
type Steps interface {
	Project(name string) (appspec.Project, error)
	// Resolve resolves src at rev: a commit SHA, or the version of a
	// chart from a Helm repository. Fresh bypasses the ls-remote cache.
	Resolve(src appspec.Source, rev string, fresh bool) (string, error)
	Render(req render.Request, hard bool) (render.ManifestRef, error)
	Compare(in cluster.CompareInput) (cluster.CompareOutput, error)
}

// Input is what a pass reads.
type Input struct {
	App appspec.Application `json:"app"`
	// Fresh bypasses the ls-remote cache; Hard renders again and compares
	// without the memo; Drift compares what the drift watch reported.
	Fresh bool `json:"fresh,omitempty"`
	Hard  bool `json:"hard,omitempty"`
	Drift bool `json:"drift,omitempty"`
	// Last is the manifests the app last rendered: a pass that is not
	// Hard reuses them for the same request.
	Last *render.ManifestRef `json:"last,omitempty"`
}

// Pass is how far a pass has got: Next is the first step not done, and
// each step done has filled its part.
type Pass struct {
	Next    Step             `json:"next"`
	Project *appspec.Project `json:"project,omitempty"`
	// Revision is the revision shown for the app, Sources the sources at
	// their resolved revisions.
	Revision  string                 `json:"revision,omitempty"`
	Sources   []render.SourceRequest `json:"sources,omitempty"`
	Manifests *render.ManifestRef    `json:"manifests,omitempty"`
	Compare   *cluster.CompareOutput `json:"compare,omitempty"`
}

// Run runs p's steps from p.Next to the end. It stops at the first step
// that fails and returns its error; p.Next is then that step. Code of
// the workflow runs it too, so it does no I/O but through steps.
func Run(steps Steps, in Input, p *Pass) error {
	for ; p.Next < StepDone; p.Next++ {
		var err error
		switch p.Next {
		case StepProject:
			err = projectStep(steps, in, p)
		case StepResolve:
			p.Revision, p.Sources, err = BuildSources(in.App, "", func(_ int, s appspec.Source, rev string) (string, error) {
				return steps.Resolve(s, rev, in.Fresh)
			})
		case StepRender:
			err = renderStep(steps, in, p)
		case StepCompare:
			var out cluster.CompareOutput
			if out, err = steps.Compare(cluster.CompareInput{Target: cluster.TargetFor(in.App), Manifests: *p.Manifests, Fresh: in.Hard, Drift: in.Drift}); err == nil {
				p.Compare = &out
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Valid says whether each step before Next has filled its part: a pass
// from another worker's quick pass is taken only then.
func (p Pass) Valid(in Input) bool {
	return p.Next >= StepProject && p.Next <= StepDone &&
		(p.Next <= StepProject || p.Project != nil) &&
		(p.Next <= StepResolve || len(p.Sources) == len(in.App.AllSources())) &&
		(p.Next <= StepRender || p.Manifests != nil) &&
		(p.Next <= StepCompare || p.Compare != nil)
}

func projectStep(steps Steps, in Input, p *Pass) error {
	proj, err := steps.Project(in.App.Project)
	if err != nil {
		return err
	}
	p.Project = &proj
	return proj.CheckApp(in.App)
}

func renderStep(steps Steps, in Input, p *Pass) error {
	req := Request(in.App, p.Sources, p.Project)
	if !in.Hard && in.Last != nil && SameRequest(in.Last.Request, req) {
		last := *in.Last // rendering it again would answer the same ref
		p.Manifests = &last
		return nil
	}
	ref, err := steps.Render(req, in.Hard)
	if err != nil {
		return err
	}
	p.Manifests = &ref
	return nil
}

// Request is the render request of app's sources under project proj
// (nil: no signature or submodule check).
func Request(app appspec.Application, sources []render.SourceRequest, proj *appspec.Project) render.Request {
	req := render.Request{AppName: app.Name, Namespace: app.Destination.Namespace, Sources: sources}
	if proj != nil {
		req.SignatureKeys = proj.SignatureKeyIDs()
		req.Scope = render.ScopeOf(*proj)
	}
	return req
}

// SameRequest says whether a and b are the same request, as their JSON
// (what a workflow's history holds) says.
func SameRequest(a, b render.Request) bool {
	//workflowcheck:ignore (encoding/json writes map keys sorted: the same value gives the same bytes)
	ja, errA := json.Marshal(a)
	//workflowcheck:ignore (as above)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// BuildSources makes the render sources of app's sources, each at the
// revision that resolve answers for it (its index, the source and the
// revision to resolve), and returns the revision shown for the app.
// Override replaces the revision of the first source that renders.
func BuildSources(app appspec.Application, override string, resolve func(int, appspec.Source, string) (string, error)) (string, []render.SourceRequest, error) {
	var (
		shown string
		out   []render.SourceRequest
	)
	for i, s := range app.AllSources() {
		rev := s.Revision()
		if override != "" && shown == "" && s.Ref == "" {
			rev = override
		}
		resolved, err := resolve(i, s, rev)
		if err != nil {
			return "", nil, err
		}
		s.TargetRevision = rev
		out = append(out, render.SourceRequest{Source: s, SHA: resolved})
		if shown == "" && (s.Ref == "" || s.Path != "") {
			shown = rev
		}
	}
	return shown, out, nil
}
