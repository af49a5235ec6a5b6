package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stage is one FROM of the Dockerfile and its instructions.
type stage struct {
	from, name string
	lines      []string
}

// parseDockerfile splits the Dockerfile into its global ARGs and stages,
// joining continued lines and dropping comments.
func parseDockerfile(t *testing.T) (args map[string]string, stages []stage) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/docker/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	args = map[string]string{}
	var cur string
	for _, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || (cur == "" && line == "") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, cur = cur+line, ""
		if line == "" {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			f := strings.Fields(rest)
			st := stage{from: f[len(f)-1]}
			if len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
				st.from, st.name = f[len(f)-3], f[len(f)-1]
			}
			stages = append(stages, st)
		case "ARG":
			if len(stages) == 0 {
				k, v, _ := strings.Cut(rest, "=")
				args[k] = v
				continue
			}
			fallthrough
		default:
			if len(stages) == 0 {
				t.Fatalf("Dockerfile: %q before the first FROM", line)
			}
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		}
	}
	return args, stages
}

func hasLine(st stage, re string) bool {
	r := regexp.MustCompile(re)
	return slices.ContainsFunc(st.lines, r.MatchString)
}

// TestDockerfile checks the image's build without a Docker engine: a UI
// stage that tolerates a missing web/, a Go stage building two static
// binaries with the go.mod Go version (the production build, -tags
// nodevserver, and the full one), and a final distroless stage running the
// production build as 65532. It also checks that the binary's dependencies build with
// CGO off.
func TestDockerfile(t *testing.T) {
	args, stages := parseDockerfile(t)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod); want == nil || args["GO_VERSION"] != string(want[1]) {
		t.Errorf("ARG GO_VERSION=%s, go.mod says %s", args["GO_VERSION"], want)
	}
	if !strings.HasPrefix(args["BASE_IMAGE"], "gcr.io/distroless/static") || !strings.HasSuffix(args["BASE_IMAGE"], ":nonroot") {
		t.Errorf("ARG BASE_IMAGE=%s, want distroless/static:nonroot", args["BASE_IMAGE"])
	}
	names := map[string]stage{}
	for _, st := range stages {
		names[st.name] = st
		for _, l := range st.lines {
			if m := regexp.MustCompile(`--from=(\S+)`).FindStringSubmatch(l); m != nil {
				if _, ok := names[m[1]]; !ok {
					t.Errorf("COPY --from=%s names no earlier stage", m[1])
				}
			}
		}
	}
	ui, build, final := names["ui"], names["build"], stages[len(stages)-1]
	if !strings.HasPrefix(ui.from, "node:") || !hasLine(ui, `if \[ -f web/package.json \]`) || !hasLine(ui, `npm ci`) {
		t.Errorf("ui stage %+v: want node, npm ci only when web/package.json exists", ui)
	}
	if !strings.HasPrefix(build.from, "golang:${GO_VERSION}") || !hasLine(build, `CGO_ENABLED=0`) ||
		!hasLine(build, `COPY --from=ui /src/web/bundle/dist/ web/bundle/dist/`) {
		t.Errorf("build stage %+v: want golang:${GO_VERSION}, CGO_ENABLED=0, the UI bundle", build)
	}
	// Two builds of ./cmd/windlass: the production one, without the
	// embedded Temporal server, and the full one.
	builds := map[string]string{}
	for _, l := range build.lines {
		for cmd := range strings.SplitSeq(l, "&&") {
			if m := regexp.MustCompile(`go build (.*)-o /out/(\S+) \./cmd/windlass$`).FindStringSubmatch(strings.TrimSpace(cmd)); m != nil {
				builds[m[2]] = m[1]
			}
		}
	}
	if flags, ok := builds["windlass"]; !ok || !strings.Contains(flags, "-tags nodevserver") {
		t.Errorf("build stage: want go build -tags nodevserver -o /out/windlass ./cmd/windlass, have %q", builds)
	}
	if flags, ok := builds["windlass-full"]; !ok || strings.Contains(flags, "-tags") {
		t.Errorf("build stage: want go build -o /out/windlass-full ./cmd/windlass, without tags, have %q", builds)
	}
	if final.from != "${BASE_IMAGE}" {
		t.Errorf("final stage from %s, want ${BASE_IMAGE}", final.from)
	}
	for _, re := range []string{`^USER 65532:65532$`, `^COPY --from=build /out/windlass /out/windlass-full /usr/local/bin/$`,
		`^ENTRYPOINT \["/usr/local/bin/windlass"\]$`, `^VOLUME .*/var/cache/windlass.*/tmp`} {
		if !hasLine(final, re) {
			t.Errorf("final stage lacks %s: %q", re, final.lines)
		}
	}
	ignore, err := os.ReadFile(filepath.Join(root, "deploy/docker/Dockerfile.dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git", "web/node_modules", ".env", ".windlass"} {
		if !slices.Contains(strings.Fields(string(ignore)), p) {
			t.Errorf("Dockerfile.dockerignore lacks %s", p)
		}
	}

	// Every package of the binary builds without cgo.
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{with .Error}}{{$.ImportPath}}: {{.}}{{end}}", "./cmd/windlass")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("CGO_ENABLED=0 go list ./cmd/windlass: %v\n%s", err, out)
	}
}
