package testbed

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

func TestGitServer(t *testing.T) {
	tests := []struct {
		name string
		opts []GitServerOptions
		auth *githttp.BasicAuth
	}{
		{name: "anonymous"},
		{
			name: "basic auth",
			opts: []GitServerOptions{{Username: "fixture", Password: "s3cret"}},
			auth: &githttp.BasicAuth{Username: "fixture", Password: "s3cret"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			srv, err := StartGitServer(t.TempDir(), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := srv.Close(); err != nil {
					t.Error(err)
				}
			})
			url, err := srv.CreateRepo("team/app.git")
			if err != nil {
				t.Fatal(err)
			}
			if url != srv.URL("team/app.git") {
				t.Errorf("CreateRepo URL %q, URL() %q", url, srv.URL("team/app.git"))
			}
			if _, err := srv.CreateRepo("team/app.git"); err == nil {
				t.Error("CreateRepo of an existing repository succeeded")
			}
			if _, err := srv.CreateRepo("../escape.git"); err == nil {
				t.Error("CreateRepo accepted a name outside the root")
			}

			work, err := NewWorkRepo(ctx, t.TempDir(), url, tt.auth)
			if err != nil {
				t.Fatal(err)
			}
			if err := work.WriteFile("apps/web/config.yaml", "replicas: 1\n"); err != nil {
				t.Fatal(err)
			}
			if err := work.WriteFile("README.md", "fixture\n"); err != nil {
				t.Fatal(err)
			}
			first, err := work.CommitAndPush(ctx, "first")
			if err != nil {
				t.Fatal(err)
			}
			if err := work.WriteFile("apps/web/config.yaml", "replicas: 2\n"); err != nil {
				t.Fatal(err)
			}
			if err := work.Remove("README.md"); err != nil {
				t.Fatal(err)
			}
			second, err := work.CommitAndPush(ctx, "second")
			if err != nil {
				t.Fatal(err)
			}
			if first == second {
				t.Fatal("both commits have the same SHA")
			}
			if err := work.Tag(ctx, "v1.0.0"); err != nil {
				t.Fatal(err)
			}

			cloneDir := t.TempDir()
			clone, err := git.PlainCloneContext(ctx, cloneDir, false, &git.CloneOptions{URL: url, Auth: authOrNil(tt.auth)})
			if err != nil {
				t.Fatalf("clone: %v", err)
			}
			head, err := clone.Head()
			if err != nil {
				t.Fatal(err)
			}
			if head.Name() != mainBranch || head.Hash().String() != second {
				t.Errorf("clone HEAD = %s %s, want %s %s", head.Name(), head.Hash(), mainBranch, second)
			}
			c, err := clone.CommitObject(head.Hash())
			if err != nil {
				t.Fatal(err)
			}
			if c.NumParents() != 1 || c.ParentHashes[0].String() != first {
				t.Errorf("second commit's parents = %v, want [%s]", c.ParentHashes, first)
			}
			if data, err := os.ReadFile(filepath.Join(cloneDir, "apps/web/config.yaml")); err != nil || string(data) != "replicas: 2\n" {
				t.Errorf("config.yaml = %q, %v", data, err)
			}
			if _, err := os.Stat(filepath.Join(cloneDir, "README.md")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("README.md should be removed: %v", err)
			}
			tag, err := clone.Reference(plumbing.NewTagReferenceName("v1.0.0"), true)
			if err != nil || tag.Hash().String() != second {
				t.Errorf("tag v1.0.0 = %v, %v; want %s", tag, err, second)
			}

			// A second work tree on the same remote extends its history.
			more, err := NewWorkRepo(ctx, t.TempDir(), url, tt.auth)
			if err != nil {
				t.Fatal(err)
			}
			added := map[string]string{"apps/web/extra.yaml": "x: 1\n", "apps/db/config.yaml": "y: 2\n"}
			if err := more.WriteFiles(added); err != nil {
				t.Fatal(err)
			}
			third, err := more.CommitAndPush(ctx, "third")
			if err != nil {
				t.Fatal(err)
			}
			if err := clone.FetchContext(ctx, &git.FetchOptions{Auth: authOrNil(tt.auth)}); err != nil {
				t.Fatalf("fetch: %v", err)
			}
			ref, err := clone.Reference(plumbing.NewRemoteReferenceName("origin", "main"), true)
			if err != nil || ref.Hash().String() != third {
				t.Fatalf("origin/main after fetch = %v, %v; want %s", ref, err, third)
			}
			c3, err := clone.CommitObject(ref.Hash())
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range added {
				f, err := c3.File(p)
				if err != nil {
					t.Fatalf("third commit: %s: %v", p, err)
				}
				if got, _ := f.Contents(); got != want {
					t.Errorf("third commit: %s = %q, want %q", p, got, want)
				}
			}

			if tt.auth == nil {
				return
			}
			for _, bad := range []struct {
				name string
				auth transport.AuthMethod
			}{
				{"wrong password", &githttp.BasicAuth{Username: tt.auth.Username, Password: "wrong"}},
				{"wrong user", &githttp.BasicAuth{Username: "intruder", Password: tt.auth.Password}},
				{"no credentials", nil},
			} {
				t.Run(bad.name, func(t *testing.T) {
					_, err := git.PlainCloneContext(ctx, t.TempDir(), false, &git.CloneOptions{URL: url, Auth: bad.auth})
					if !errors.Is(err, transport.ErrAuthenticationRequired) {
						t.Errorf("clone error = %v, want %v", err, transport.ErrAuthenticationRequired)
					}
				})
			}
			t.Run("401 with WWW-Authenticate", func(t *testing.T) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/info/refs?service=git-upload-pack", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.SetBasicAuth(tt.auth.Username, "wrong")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("status %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
				}
			})
		})
	}
}

func authOrNil(a *githttp.BasicAuth) transport.AuthMethod {
	if a == nil {
		return nil
	}
	return a
}
