package source

import (
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/internal/failure"
	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
	"github.com/windlass-cd/windlass/internal/testbed"
)

// TestRenderSignaturePolicy renders commits of a repository served over
// HTTP under a signature policy: a commit signed by an allowed key
// renders, with full and shallow fetches; an unsigned commit, or one
// signed by a key the project does not allow, is refused with a
// non-retryable UntrustedCommit naming the commit and the signer; without
// a policy any commit renders, and its cache entry does not serve a
// request with a policy.
func TestRenderSignaturePolicy(t *testing.T) {
	ctx := t.Context()
	srv := gitServer(t)
	url, w := fixtureRepo(t, srv, "team/signed.git", nil)
	store, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	newKey := func(name string) (*openpgp.Entity, string) {
		e, pub, err := testbed.NewGPGKey(name)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := store.AddGPGKeys(ctx, pub)
		if err != nil {
			t.Fatal(err)
		}
		return e, keys[0].KeyID
	}
	alice, aliceID := newKey("alice")
	bob, bobID := newKey("bob")
	signed := func(msg string, key *openpgp.Entity) string {
		if err := w.WriteFile("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "+strings.ToLower(strings.ReplaceAll(msg, " ", "-"))+"\n"); err != nil {
			t.Fatal(err)
		}
		sha, err := w.SignedCommitAndPush(ctx, msg, key)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	byAlice, unsigned, byBob := signed("by alice", alice), signed("not signed", nil), signed("by bob", bob)

	tests := []struct {
		name    string
		sha     string
		keys    []string
		shallow bool
		// signer is the key the refusal names ("" for an unsigned commit);
		// refused says there is one.
		signer  string
		refused bool
	}{
		{name: "signed by an allowed key", sha: byAlice, keys: []string{aliceID}},
		{name: "signed by an allowed key, shallow fetch", sha: byAlice, keys: []string{aliceID}, shallow: true},
		{name: "either of two keys", sha: byBob, keys: []string{aliceID, bobID}},
		{name: "no policy, unsigned", sha: unsigned},
		{name: "unsigned", sha: unsigned, keys: []string{aliceID}, refused: true},
		{name: "unsigned, shallow fetch", sha: unsigned, keys: []string{aliceID}, shallow: true, refused: true},
		{name: "signed by a key the project does not allow", sha: byBob, keys: []string{aliceID}, signer: bobID, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newActivities(t, nil, WithShallowFetch(tt.shallow))
			r, err := render.NewRenderer(render.Config{Store: render.NewMemoryStore(), Git: src, Commits: src, GPGKeys: store, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			acts, err := render.New(r)
			if err != nil {
				t.Fatal(err)
			}
			req := render.SingleSource("signed", "default", appspec.Source{RepoURL: url, Path: "app"}, tt.sha)
			req.SignatureKeys = tt.keys
			ref, err := acts.Render(ctx, render.RenderInput{Request: req})
			if !tt.refused {
				if err != nil || ref.Count != 1 {
					t.Fatalf("Render = %+v, %v; want one object", ref, err)
				}
				return
			}
			wantErrType(t, err, "UntrustedCommit")
			msg := err.Error()
			if !strings.Contains(msg, tt.sha) || !strings.Contains(msg, "windlass-testbed") {
				t.Errorf("error %q does not name the commit and its committer", msg)
			}
			if tt.signer != "" && !strings.Contains(msg, "signed by key "+tt.signer) {
				t.Errorf("error %q does not name the signer %s", msg, tt.signer)
			}
			if tt.signer == "" && !strings.Contains(msg, "is not signed") {
				t.Errorf("error %q does not say the commit is unsigned", msg)
			}
		})
	}

	t.Run("a cache entry without a policy serves no request with one", func(t *testing.T) {
		src := newActivities(t, nil)
		r, err := render.NewRenderer(render.Config{Store: render.NewMemoryStore(), Git: src, Commits: src, GPGKeys: store, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		req := render.SingleSource("signed", "default", appspec.Source{RepoURL: url, Path: "app"}, unsigned)
		if _, err := r.Render(ctx, req, false); err != nil {
			t.Fatal(err)
		}
		req.SignatureKeys = []string{aliceID}
		if _, err := r.Render(ctx, req, false); failure.TypeOf(err) != "UntrustedCommit" {
			t.Fatalf("Render under a policy = %v, want UntrustedCommit", err)
		}
	})

	t.Run("a worker without a key store refuses a policy", func(t *testing.T) {
		src := newActivities(t, nil)
		r, err := render.NewRenderer(render.Config{Store: render.NewMemoryStore(), Git: src, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		req := render.SingleSource("signed", "default", appspec.Source{RepoURL: url, Path: "app"}, byAlice)
		req.SignatureKeys = []string{aliceID}
		if _, err := r.Render(ctx, req, false); failure.TypeOf(err) != "SignatureCheckUnavailable" {
			t.Fatalf("Render = %v, want SignatureCheckUnavailable", err)
		}
	})
}
