package workflows

import (
	"sync"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/activities/source"
	"github.com/windlass-cd/windlass/internal/appspec"
)

const sha3 = "3333333333333333333333333333333333333333"

var (
	meta1 = &appspec.RevisionMetadata{Message: "guestbook: two replicas", Author: "Ada", Date: time.Date(2026, 1, 9, 8, 0, 0, 0, time.UTC)}
	meta2 = &appspec.RevisionMetadata{Message: "guestbook: three replicas", Author: "Grace", Date: time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)}
)

// refWith is ref(sha) as a worker that has read the commit renders it.
func refWith(sha string, m *appspec.RevisionMetadata) render.ManifestRef {
	r := ref(sha)
	r.RevisionMetadata = m
	return r
}

// expectPass expects one reconcile pass: resolve (fresh), render unless
// the pass reuses the last render (rendered nil), compare.
func (s *appSuite) expectPass(sha string, fresh, hard bool, rendered *render.ManifestRef, compared render.ManifestRef, out cluster.CompareOutput) {
	s.steps.On(source.ResolveRevisionName, source.ResolveInput{RepoURL: repo, Revision: "main", Hard: fresh}).
		Return(source.ResolveOutput{SHA: sha, Ref: "refs/heads/main"}, nil).Once()
	if rendered != nil {
		s.env.OnActivity(render.RenderName, mock.Anything, render.RenderInput{Request: ref(sha).Request, Hard: hard}).Return(*rendered, nil).Once()
	}
	s.steps.On(cluster.CompareName, cluster.CompareInput{Target: target(), Manifests: compared, Fresh: hard}).Return(out, nil).Once()
}

// memoMessages records the revision messages the app's memo upserts write,
// a repeat of the last one left out.
func (s *appSuite) memoMessages() func() []string {
	var (
		mu   sync.Mutex
		msgs []string
	)
	s.env.OnUpsertMemo(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		msg, ok := args.Get(0).(map[string]any)[MemoRevisionMessage]
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(msgs) == 0 || msgs[len(msgs)-1] != msg {
			msgs = append(msgs, msg.(string))
		}
	})
	return func() []string { mu.Lock(); defer mu.Unlock(); return msgs }
}

// revisionRun runs a manual app through: sha1 rendered with its commit's
// metadata; a sync; a hard refresh rendered by a worker that has not read
// the commit; a new commit sha2 with metadata; then sha3 without. It
// returns the statuses after each step and the memo's messages.
func (s *appSuite) revisionRun() (views []AppView, memo func() []string) {
	memo = s.memoMessages()
	s.expectProject(appspec.DefaultProjectSpec())
	s.expectPass(sha1, false, false, ptr(refWith(sha1, meta1)), refWith(sha1, meta1), outOfSync)
	s.expectResolve(sha1, true) // the sync update
	s.expectSync(1, sha1, nil)
	s.expectPass(sha1, false, false, nil, refWith(sha1, meta1), synced)
	s.expectPass(sha1, true, true, ptr(ref(sha1)), ref(sha1), synced)
	s.expectPass(sha2, true, false, ptr(refWith(sha2, meta2)), refWith(sha2, meta2), outOfSync)
	s.expectPass(sha3, true, false, ptr(ref(sha3)), ref(sha3), outOfSync)
	refresh := func(hard bool) func() {
		return func() { s.env.SignalWorkflow(SignalRefresh, RefreshRequest{Hard: hard, Reason: "test"}) }
	}
	s.at(30*time.Second, func() { s.update(UpdateSync, SyncRequest{Initiator: "alice"}) })
	s.at(time.Minute, refresh(true))
	s.at(2*time.Minute, refresh(false))
	s.at(3*time.Minute, refresh(false))
	for _, d := range []time.Duration{50 * time.Second, 90 * time.Second, 150 * time.Second, 210 * time.Second} {
		s.at(d, func() { views = append(views, s.status()) })
	}
	s.cancelAt(4 * time.Minute)
	s.env.ExecuteWorkflow(ApplicationWorkflowName, AppInput{Spec: testSpec(false), Config: AppConfig{RefreshSeconds: 3600}})
	s.Require().Len(views, 4)
	return views, memo
}

// The commit's metadata from the render reaches the status, the recent
// syncs and the memo the list reads; it stays while the SHA does, and goes
// with a SHA whose commit is not known.
func (s *appSuite) TestRevisionMessage() {
	views, memo := s.revisionRun()
	synced, hard, second, third := views[0], views[1], views[2], views[3]
	s.Equal(meta1, synced.Status.RevisionMetadata)
	s.Require().Len(synced.History, 1)
	s.Equal(meta1.Message, synced.History[0].RevisionMessage)
	s.Equal(meta1, hard.Status.RevisionMetadata, "the SHA did not change: its metadata stays")
	s.Equal(sha2, second.Status.SHA)
	s.Equal(meta2, second.Status.RevisionMetadata)
	s.Equal(sha3, third.Status.SHA)
	s.Nil(third.Status.RevisionMetadata)
	s.Equal([]string{meta1.Message, meta2.Message, ""}, memo())
}
