package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-cd/windlass/internal/testbed"
	"github.com/windlass-cd/windlass/workflows"
)

// hostileCase is one directory of the hostile repository, and the app
// that renders it.
type hostileCase struct {
	name string
	// files are the directory's files at the first commit, and at the
	// fixing commit with v "2".
	files func(v string) map[string]string
	// hostile turns the directory hostile in the work tree; undo removes
	// what hostile added and files does not overwrite.
	hostile func(t *testing.T, w *testbed.WorkRepo, dir string)
	undo    []string
	// want is what the app's message must name once the hostile commit
	// is refreshed: one of its |-separated strings.
	want string
}

// luaBombKind is the kind of the resource whose health script is a
// string bomb while the resource carries luaBombAnnotation.
const (
	luaBombKind       = "ServiceAccount"
	luaBombAnnotation = "e2e.windlass.dev/bomb"
)

// luaBomb is the health script of luaBombKind: on an object that carries
// luaBombAnnotation it doubles a string forever. The annotation comes from
// the repository, so that fixing the repository defuses it.
const luaBomb = `local a = obj.metadata.annotations
if a ~= nil and a["` + luaBombAnnotation + `"] == "true" then
  local s = "x"
  while true do s = s .. s end
end
return {status = "Healthy", message = "defused"}
`

// bigChart is a Helm template of n ConfigMaps of 1 MB.
func bigChart(n int) string {
	return fmt.Sprintf("{{- range $i := until %d }}\n---\napiVersion: v1\nkind: ConfigMap\n"+
		"metadata: {name: big-{{ $i }}}\ndata: {x: {{ repeat 1000000 \"x\" }}}\n{{- end }}\n", n)
}

func configMap(name, v string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {v: '%s'}\n", name, v)
}

// billionLaughs is a YAML document of nine levels of nine aliases.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}

// hostileCases are the renders of issue 24 that must fail in their
// sandbox, or at the repository's root, with an error that names what
// they broke. The limits are windlass dev's defaults: 1 GiB of memory,
// 60 s of CPU, 64 MiB of stack and of output.
func hostileCases(outside string) []hostileCase {
	jsonnet := func(name string) func(string) map[string]string {
		return func(v string) map[string]string {
			return map[string]string{"main.jsonnet": fmt.Sprintf("{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '%s' }, data: { v: '%s' } }\n", name, v)}
		}
	}
	chart := func(name string) func(string) map[string]string {
		return func(v string) map[string]string {
			return map[string]string{"Chart.yaml": "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n", "templates/cm.yaml": configMap(name, v)}
		}
	}
	kustomization := func(name string) func(string) map[string]string {
		return func(v string) map[string]string {
			return map[string]string{"kustomization.yaml": "resources: [cm.yaml]\n", "cm.yaml": configMap(name, v)}
		}
	}
	plain := func(name string) func(string) map[string]string {
		return func(v string) map[string]string { return map[string]string{"cm.yaml": configMap(name, v)} }
	}
	write := func(files map[string]string) func(*testing.T, *testbed.WorkRepo, string) {
		return func(t *testing.T, w *testbed.WorkRepo, dir string) {
			for p, c := range files {
				if err := w.WriteFile(path.Join(dir, p), c); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return []hostileCase{{
		// A Go stack overflow cannot be recovered: it would end windlass dev.
		name: "stack", files: jsonnet("stack"),
		hostile: write(map[string]string{"main.jsonnet": "local f(x) = f(x + 1) tailstrict; f(0)\n"}),
		want:    "stack limit of 64 MiB",
	}, {
		// std.range alone asks for 50 million values: the sandbox runs out
		// of memory in seconds, long before its 60 s of CPU.
		name: "jsonnet-memory", files: jsonnet("jsonnet-memory"),
		hostile: write(map[string]string{"main.jsonnet": "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm' }, " +
			"data: { n: std.toString(std.length(std.foldl(function(a, b) a + [b], std.range(1, 50000000), []))) } }\n"}),
		want: "memory limit of 1 GiB",
	}, {
		// A string doubled 40 times: 1 TiB, if memory allowed.
		name: "helm-memory", files: chart("helm-memory"),
		hostile: write(map[string]string{"templates/cm.yaml": "{{- $s := \"x\" }}{{- range until 40 }}{{- $s = print $s $s }}{{- end }}\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata: {n: \"{{ len $s }}\"}\n"}),
		want: "memory limit of 1 GiB",
	}, {
		// 72 ConfigMaps of 1 MB: 69 MiB of manifests, whose render fits
		// in the memory limit (about 500 MiB) and breaks the output limit.
		name: "helm-output", files: chart("helm-output"),
		hostile: write(map[string]string{"templates/cm.yaml": bigChart(72)}),
		want:    "output limit of 64 MiB",
	}, {
		// The chart of 200 MB: a render that big takes about 1 GiB
		// before its output is measured, so the memory limit is the one it
		// breaks (at times, the GC keeping up, the output limit).
		name: "helm-200mb", files: chart("helm-200mb"),
		hostile: write(map[string]string{"templates/cm.yaml": bigChart(200)}),
		want:    "memory limit of 1 GiB|output limit of 64 MiB",
	}, {
		// kyaml expands the aliases: the memory limit, not a YAML error.
		name: "laughs-resources", files: kustomization("laughs-resources"),
		hostile: write(map[string]string{"kustomization.yaml": "resources: [cm.yaml, bomb.yaml]\n", "bomb.yaml": billionLaughs()}),
		undo:    []string{"bomb.yaml"}, want: "memory limit of 1 GiB",
	}, {
		name: "laughs-patches", files: kustomization("laughs-patches"),
		hostile: write(map[string]string{"kustomization.yaml": "resources: [cm.yaml]\npatches: [{path: bomb.yaml}]\n", "bomb.yaml": billionLaughs()}),
		undo:    []string{"bomb.yaml"}, want: "memory limit of 1 GiB",
	}, {
		name: "zero", files: plain("zero"),
		hostile: func(t *testing.T, w *testbed.WorkRepo, dir string) {
			if err := w.Symlink(dir+"/zero.yaml", "/dev/zero"); err != nil {
				t.Fatal(err)
			}
		},
		undo: []string{"zero.yaml"}, want: "zero/zero.yaml",
	}, {
		// links/a/up is "..", links/L "a/up/.." (the checkout) and each
		// links/Mi "M(i-1)/..", one level higher: links/M30 is "/" from
		// any checkout less than 30 deep, yet every link's text stays
		// inside the checkout.
		name: "chain", files: plain("chain"),
		hostile: func(t *testing.T, w *testbed.WorkRepo, dir string) {
			links := map[string]string{"links/a/up": "..", "links/L": "a/up/..", "links/M1": "L/.."}
			for i := 2; i <= 30; i++ {
				links[fmt.Sprintf("links/M%d", i)] = fmt.Sprintf("M%d/..", i-1)
			}
			links[dir+"/secret.yaml"] = "../links/M30" + outside
			for link, target := range links {
				if err := w.Symlink(link, target); err != nil {
					t.Fatal(err)
				}
			}
		},
		undo: []string{"secret.yaml"}, want: "chain/secret.yaml",
	}}
}

// TestHostileRepositories is the proof of issue 24 against windlass dev:
// one commit turns a directory of each hostile case below at once; each
// app then shows an error that names the limit it broke or the path it
// read, while a canary app syncs, dev stays ready and its own memory
// stays small. A commit that fixes them all syncs every app again, with
// its history intact. Two cases are not renders: a Jsonnet TLA too large
// for an app's spec, and an SSH server that never answers.
func TestHostileRepositories(t *testing.T) {
	start := time.Now()
	customizations := t.TempDir()
	if err := os.MkdirAll(filepath.Join(customizations, luaBombKind), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(customizations, luaBombKind, "health.lua"), []byte(luaBomb), 0o644); err != nil {
		t.Fatal(err)
	}
	silent := silentSSHServer(t)
	key := sshKeyFile(t)
	creds := filepath.Join(t.TempDir(), "credentials.json")
	js, _ := json.Marshal(map[string]any{"repositories": []map[string]any{
		{"urlPrefix": "ssh://git@" + silent, "sshPrivateKeyFile": key, "insecureIgnoreHostKey": true},
	}})
	if err := os.WriteFile(creds, js, 0o600); err != nil {
		t.Fatal(err)
	}
	dev := startDev(t, "WINDLASS_RESOURCE_CUSTOMIZATIONS="+customizations, "WINDLASS_REPO_CREDENTIALS="+creds)
	t.Logf("windlass dev ready after %s", time.Since(start).Round(time.Second))

	t.Run("cases", func(t *testing.T) {
		t.Run("renders", func(t *testing.T) { t.Parallel(); hostileRenders(t, dev) })
		t.Run("tla", func(t *testing.T) { t.Parallel(); hostileTLA(t, dev) })
		t.Run("ssh", func(t *testing.T) { t.Parallel(); hostileSSH(t, dev, silent, key) })
	})

	if code, err := dev.ready(); code != http.StatusOK {
		t.Errorf("windlass dev's /readyz after the hostile cases: %d %v", code, err)
	}
	// The sandboxes are child processes, so dev's own peak stays near what
	// it takes to run Temporal, the worker and the API (about 400 MiB
	// here). Rendered in dev, one of the bombs alone would take it past the
	// render memory limit of 1 GiB, and the stack overflow would end it.
	const budget = 1536 << 20
	hwm := dev.vmHWM(t)
	t.Logf("windlass dev's peak RSS (VmHWM): %d MiB; the test took %s", hwm>>20, time.Since(start).Round(time.Second))
	if hwm > budget {
		t.Errorf("windlass dev's peak RSS is %d MiB, over its budget of %d MiB", hwm>>20, budget>>20)
	}
}

// hostileRenders runs the render cases, a Lua string bomb in a live health
// check and the canary in one repository.
func hostileRenders(t *testing.T, dev *devProcess) {
	start := time.Now()
	outsideContent := uniq("outside-content")
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\nstringData: {token: "+outsideContent+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := hostileCases(outside)
	repoURL, work := newRepo(t, uniq("hostile"))
	sa := func(annotations string) string {
		return "apiVersion: v1\nkind: " + luaBombKind + "\nmetadata: {name: lua, annotations: {" + annotations + "}}\n"
	}
	files := func(v string) map[string]string {
		// The ConfigMap of lua/ is in a later wave, so that the sync waits
		// for the health of the wave before it (as in Argo CD, a sync does
		// not wait for its last wave).
		out := map[string]string{"canary/cm.yaml": configMap("canary", v), "lua/sa.yaml": sa(""),
			"lua/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lua, annotations: {argocd.argoproj.io/sync-wave: '1'}}\ndata: {v: '%s'}\n", v)}
		for _, c := range cases {
			for p, content := range c.files(v) {
				out[c.name+"/"+p] = content
			}
		}
		return out
	}
	push(t, work, files("1"))

	// Every app syncs once from the good commit.
	prefix := uniq("h")
	appName := func(c string) string { return prefix + "-" + c }
	var names []string
	for _, c := range append(caseNames(cases), "lua", "canary") {
		n := appName(c)
		names = append(names, n)
		dev.createApp(t, n, repoURL, "path: "+c, n) // in namespace n
		t.Cleanup(func() { _ = bed.kube.CoreV1().Namespaces().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	for _, n := range names {
		dev.syncAsync(t, n)
	}
	first := map[string]workflows.SyncSummary{}
	dev.waitApps(t, 3*time.Minute, "the first sync", names, func(n string, v workflows.AppView) (bool, string) {
		if len(v.History) != 1 || v.History[0].Phase != workflows.PhaseSucceeded || v.Status.Sync != "Synced" {
			return false, "want one Succeeded sync and Synced"
		}
		first[n] = v.History[0]
		return true, ""
	})
	t.Logf("good commit: every app synced after %s", time.Since(start).Round(time.Second))
	step := time.Now()

	// One commit turns every case hostile, arms the Lua bomb and
	// changes the canary.
	for _, c := range cases {
		c.hostile(t, work, c.name)
	}
	hostileSHA := push(t, work, map[string]string{"canary/cm.yaml": configMap("canary", "hostile-commit"),
		"lua/sa.yaml": sa(luaBombAnnotation + ": 'true'")})
	for _, n := range names {
		if out, stderr, code := dev.cli("", "app", "refresh", n, "--hard"); code != 0 {
			t.Fatalf("refresh %s: exit %d: %s%s", n, code, out, stderr)
		}
	}
	// The canary and the Lua app sync the hostile commit once they see it.
	synced := []string{appName("canary"), appName("lua")}
	dev.waitApps(t, 3*time.Minute, "the hostile commit", synced, func(n string, v workflows.AppView) (bool, string) {
		return v.Status.SHA == hostileSHA, "want " + hostileSHA
	})
	for _, n := range synced {
		dev.syncAsync(t, n)
	}
	want := map[string]string{}
	for _, c := range cases {
		want[appName(c.name)] = c.want
	}
	dev.waitApps(t, 4*time.Minute, "each app's error", names, func(n string, v workflows.AppView) (bool, string) {
		switch n {
		case appName("canary"):
			return len(v.History) == 2 && v.History[0].Phase == workflows.PhaseSucceeded && v.History[0].SHA == hostileSHA &&
				v.Status.Sync == "Synced", "want a second sync, Succeeded, of the hostile commit"
		case appName("lua"):
			// The sync applies the annotation, and the health check of the
			// live object breaks its budget: the sync fails at once with
			// the script's error, and so does the resource's health.
			var health string
			for _, r := range v.Status.Resources {
				if r.Kind == luaBombKind {
					health = string(r.Health) + ": " + r.HealthMessage
				}
			}
			const broke = "lua health script for " + luaBombKind + " exceeded its memory budget of 64 MiB"
			return len(v.History) == 2 && v.History[0].Phase == workflows.PhaseFailed && strings.Contains(v.History[0].Message, broke) &&
					strings.Contains(health, broke),
				fmt.Sprintf("want a Failed sync and a health naming the script's memory budget; health %s; last sync %s: %s", health, v.History[0].Phase, v.History[0].Message)
		}
		return v.Status.Sync == "Unknown" && containsAny(v.Status.Message, want[n]), "want Unknown naming " + want[n]
	})
	t.Logf("hostile commit: every app shows its error, and the canary synced, after %s", time.Since(step).Round(time.Second))
	if code, err := dev.ready(); code != http.StatusOK {
		t.Errorf("windlass dev's /readyz after the hostile commit: %d %v", code, err)
	}
	chain := appName("chain")
	if v, _, _ := dev.app(chain); strings.Contains(v.Status.Message, outsideContent) {
		t.Errorf("the chain app's message shows the outside file: %s", v.Status.Message)
	}

	// A commit that fixes every directory syncs each app again,
	// after the syncs it had.
	step = time.Now()
	for _, c := range cases {
		for _, p := range c.undo {
			if err := work.Remove(c.name + "/" + p); err != nil {
				t.Fatal(err)
			}
		}
	}
	fixedSHA := push(t, work, files("2"))
	for _, n := range names {
		if out, stderr, code := dev.cli("", "app", "refresh", n, "--hard"); code != 0 {
			t.Fatalf("refresh %s: exit %d: %s%s", n, code, out, stderr)
		}
	}
	dev.waitApps(t, 3*time.Minute, "the fixed commit", names, func(n string, v workflows.AppView) (bool, string) {
		return v.Status.SHA == fixedSHA && v.Status.Sync == "OutOfSync", "want OutOfSync at " + fixedSHA
	})
	for _, n := range names {
		dev.syncAsync(t, n)
	}
	dev.waitApps(t, 3*time.Minute, "the fixed commit synced", names, func(n string, v workflows.AppView) (bool, string) {
		syncs := 2 // the first, and the fixed
		if n == appName("canary") || n == appName("lua") {
			syncs = 3 // and the hostile commit's
		}
		return len(v.History) == syncs && v.History[0].Phase == workflows.PhaseSucceeded && v.History[0].SHA == fixedSHA &&
				v.Status.Sync == "Synced" && v.Status.Health == "Healthy",
			fmt.Sprintf("want %d syncs, the last Succeeded at %s, Synced and Healthy", syncs, fixedSHA)
	})
	t.Logf("fixed commit: every app synced again after %s", time.Since(step).Round(time.Second))
	for _, n := range names {
		out, stderr, code := dev.cli("", "app", "history", n, "-o", "json")
		var h workflows.HistoryView
		if code != 0 || json.Unmarshal([]byte(out), &h) != nil || len(h.Recent) == 0 {
			t.Fatalf("history %s: exit %d: %s%s", n, code, out, stderr)
		}
		if d := cmp.Diff(first[n], h.Recent[len(h.Recent)-1]); d != "" {
			t.Errorf("%s: the first sync changed in the history (-before +now):\n%s", n, d)
		}
	}

	// The file the chain leads to reached neither the cluster, nor dev's
	// log, nor any workflow history.
	if _, err := bed.kube.CoreV1().Secrets(chain).Get(t.Context(), "stolen", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the outside Secret is in the cluster (or: %v)", err)
	}
	if strings.Contains(dev.logs.String(), outsideContent) {
		t.Error("the outside file is in windlass dev's log")
	}
	if where, n := dev.historiesContain(t, []byte(outsideContent)); where != "" {
		t.Errorf("the outside file is in the history of %s", where)
	} else if n < 50 {
		t.Errorf("scanned only %d history events: the scan is not looking at dev's workflows", n)
	}
}

// containsAny says whether s contains one of the |-separated subs.
func containsAny(s, subs string) bool {
	for sub := range strings.SplitSeq(subs, "|") {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func caseNames(cases []hostileCase) []string {
	var out []string
	for _, c := range cases {
		out = append(out, c.name)
	}
	return out
}

// hostileTLA: an app spec with a 1 MB Jsonnet TLA is refused when it is
// created, naming its size, and nothing is created.
func hostileTLA(t *testing.T, dev *devProcess) {
	big := strings.Repeat("x", 1_000_000)
	name := uniq("tla")
	dev.createAppFails(t, name, "https://example.com/tla.git", "path: .\n    directory: {jsonnet: {tlas: [{name: big, value: "+big+"}]}}", name, "128 KiB")
	body := appBody(uniq("tla-api"), "https://example.com/tla.git", ".", name)
	body["source"].(map[string]any)["directory"] = map[string]any{"jsonnet": map[string]any{"tlas": []map[string]any{{"name": "big", "value": big}}}}
	var problem struct{ Detail string }
	if code := dev.call(t, http.MethodPost, "/api/v1/applications", body, &problem); (code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge) ||
		!strings.Contains(problem.Detail, "128 KiB") {
		t.Errorf("create with a 1 MB TLA through the API: status %d: %s; want 400 or 413 naming the 128 KiB bound", code, problem.Detail)
	} else {
		t.Logf("create with a 1 MB TLA: %d %s", code, problem.Detail)
	}
	for _, n := range []string{name, body["name"].(string)} {
		if _, stderr, code := dev.cli("", "app", "get", n); code != 4 {
			t.Errorf("app get %s after a refused create: exit %d, want 4 (not found): %s", n, code, stderr)
		}
	}
}

// createAppFails creates an app with the CLI as createApp does, and wants
// it refused with an error that names want.
func (d *devProcess) createAppFails(t *testing.T, name, repoURL, source, ns, want string) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(manifest, []byte(argoApp(name, repoURL, source, ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := d.cli("", "app", "create", "-f", manifest)
	if code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("create %s: exit %d: %s%s; want it refused naming %q", name, code, out, stderr, want)
	}
}

// hostileSSH: registering an SSH repository whose server accepts the
// connection and never answers fails with a timeout, and an app of such
// a repository shows the timeout instead of hanging.
func hostileSSH(t *testing.T, dev *devProcess, addr, key string) {
	url := "ssh://git@" + addr + "/x.git"
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	started := time.Now()
	cmd := exec.CommandContext(ctx, dev.bin, "repo", "--config", dev.config, "add", url, "--ssh-private-key-path", key, "--insecure-ignore-host-key")
	cmd.Env = append(os.Environ(), "WINDLASS_SERVER=", "WINDLASS_TOKEN=")
	out, err := cmd.CombinedOutput()
	t.Logf("repo add of a silent SSH server returned after %s", time.Since(started).Round(time.Second))
	var exit *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &exit) || !strings.Contains(string(out), "timed out") {
		t.Errorf("repo add %s: %v (deadline: %v): %s; want it to fail naming the timeout", url, err, ctx.Err(), out)
	}

	name := uniq("ssh")
	dev.createApp(t, name, url, "path: .", name)
	started = time.Now()
	dev.waitApps(t, 90*time.Second, "the app names the timeout", []string{name}, func(_ string, v workflows.AppView) (bool, string) {
		return v.Status.Sync == "Unknown" && strings.Contains(v.Status.Message, "timed out"), "want Unknown naming the timeout"
	})
	t.Logf("the app of the silent SSH server named the timeout after %s", time.Since(started).Round(time.Second))
}

// silentSSHServer listens on loopback, accepts connections and never
// answers; it returns its address.
func silentSSHServer(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// sshKeyFile writes a new ed25519 private key (PKCS #8 PEM) and returns
// its path.
func sshKeyFile(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
