package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/api"
	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// TestSignedCommits: under a project whose signatureKeys name a key of
// the GPG key store, a commit signed by that key syncs; an unsigned commit
// pushed after it is refused, the app's status names the commit, and a
// sync of it fails.
func TestSignedCommits(t *testing.T) {
	key, pub, err := testbed.NewGPGKey("e2e-signer")
	if err != nil {
		t.Fatal(err)
	}
	var added api.GPGKeyList
	if code := call(t, http.MethodPost, "/api/v1/gpgkeys", api.GPGKeyCreate{KeyData: pub}, &added); code != http.StatusCreated || len(added.Items) != 1 {
		t.Fatalf("add GPG key: status %d %+v", code, added)
	}
	keyID := added.Items[0].KeyID
	t.Cleanup(func() { _ = bed.settings.DeleteGPGKey(t.Context(), keyID) })
	proj := uniq("gpg")
	if code := call(t, http.MethodPost, "/api/v1/projects", map[string]any{"name": proj, "sourceRepos": []string{"*"},
		"destinations": []map[string]string{{"server": "*", "namespace": "*"}}, "signatureKeys": []map[string]string{{"keyID": keyID}}}, nil); code != http.StatusCreated {
		t.Fatalf("create project: status %d", code)
	}
	name, ns := uniq("gpg"), uniq("gpg")
	repoURL, work := newRepo(t, name)
	cm := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: signed\ndata:\n  v: %q\n", v)
	}
	if err := work.WriteFile("app/cm.yaml", cm("1")); err != nil {
		t.Fatal(err)
	}
	signed, err := work.SignedCommitAndPush(t.Context(), "signed", key)
	if err != nil {
		t.Fatal(err)
	}
	body := appBody(name, repoURL, "app", ns)
	body["project"] = proj
	if code := call(t, http.MethodPost, "/api/v1/applications", body, nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?project="+proj, nil, &res); code != http.StatusOK ||
		res.Phase != workflows.PhaseSucceeded || res.SHA != signed {
		t.Fatalf("sync of the signed commit: status %d, %s %s (sha %s, want %s)", code, res.Phase, res.Message, res.SHA, signed)
	}

	if err := work.WriteFile("app/cm.yaml", cm("2")); err != nil {
		t.Fatal(err)
	}
	unsigned, err := work.CommitAndPush(t.Context(), "unsigned")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the unsigned commit refused in the status", func() (bool, string) {
		call(t, http.MethodPost, "/api/v1/applications/"+name+"/refresh?project="+proj, nil, nil)
		var v workflows.AppView
		call(t, http.MethodGet, "/api/v1/applications/"+name+"?project="+proj, nil, &v)
		msg := v.Status.Message
		return strings.Contains(msg, unsigned) && strings.Contains(msg, "is not signed"), string(v.Status.Sync) + ": " + msg
	})
	res = workflows.SyncResult{}
	code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync?project="+proj, nil, &res)
	if code == http.StatusOK && res.Phase == workflows.PhaseSucceeded {
		t.Fatalf("sync of the unsigned commit succeeded: %+v", res)
	}
	if got, err := bed.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "signed", metav1.GetOptions{}); err != nil || got.Data["v"] != "1" {
		t.Fatalf("the live ConfigMap changed: %+v, %v", got, err)
	}
}
