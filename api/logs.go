package api

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/windlass-cd/windlass/activities/cluster"
	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/appspec"
)

// GET .../logs streams the logs of a pod, or of a workload's pods, of the
// app's resource tree; without a resource, of all the app's pods. The pods of a workload are its descendants in the
// tree (Deployment → ReplicaSet → Pod, Job → Pod, and so on), read at the
// start: pods that start later are not followed. RBAC: get on the app and
// logs get on <project>/<app>, as Argo CD.
//
// The answer is text/plain, a line per log line, each prefixed with
// "<pod>: " for a workload; or, when the request accepts
// text/event-stream, Server-Sent Events "log" whose data is a LogLine.

// LogLine is one line of a log stream.
type LogLine struct {
	Pod  string `json:"pod"`
	Line string `json:"line"`
}

const (
	// maxLogPods bounds the pods whose logs one request merges.
	maxLogPods = 32
	// maxLogLine bounds one line; a longer one ends its pod's stream.
	maxLogLine = 1 << 20
	eventLog   = "log"
)

// logQuery reads the log options and the filter of a request.
func logQuery(c *echo.Context) (corev1.PodLogOptions, logFilter, error) {
	o := corev1.PodLogOptions{Container: c.QueryParam("container")}
	var err error
	for _, f := range []struct {
		param string
		into  *bool
	}{{"follow", &o.Follow}, {"previous", &o.Previous}} {
		if v := c.QueryParam(f.param); v != "" {
			if *f.into, err = strconv.ParseBool(v); err != nil {
				return o, logFilter{}, problem(http.StatusBadRequest, f.param+" "+strconv.Quote(v)+": want true or false")
			}
		}
	}
	for _, f := range []struct {
		param string
		into  **int64
	}{{"tailLines", &o.TailLines}, {"sinceSeconds", &o.SinceSeconds}} {
		if v := c.QueryParam(f.param); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || (n == 0 && f.param == "sinceSeconds") {
				return o, logFilter{}, problem(http.StatusBadRequest, f.param+" "+strconv.Quote(v)+": want a positive number")
			}
			*f.into = &n
		}
	}
	return o, newLogFilter(c.QueryParam("filter")), nil
}

// logFilter keeps the lines that hold its text, or with a leading "!"
// those that do not; the empty filter keeps every line.
type logFilter struct {
	text    string
	exclude bool
}

func newLogFilter(f string) logFilter {
	if rest, ok := strings.CutPrefix(f, "!"); ok {
		return logFilter{text: rest, exclude: true}
	}
	return logFilter{text: f}
}

func (f logFilter) keep(line string) bool {
	return f.text == "" || strings.Contains(line, f.text) != f.exclude
}

// podRef names one pod.
type podRef struct{ namespace, name string }

func isPod(n cluster.ResourceNode) bool { return n.Group == "" && n.Kind == "Pod" }

// logPods are the pods of the resource: itself when it is a pod, else its
// descendants in the tree, at most maxLogPods.
func logPods(t resourceTarget) []podRef {
	if isPod(t.node) {
		return []podRef{{t.key.Namespace, t.node.Name}}
	}
	below := map[string]bool{t.node.UID: true}
	var pods []podRef
	// The tree lists owners before their children.
	for _, n := range t.tree.Nodes {
		for _, p := range n.Parents {
			if below[p] {
				below[n.UID] = true
				if isPod(n) && n.Namespace == t.key.Namespace && len(pods) < maxLogPods {
					pods = append(pods, podRef{n.Namespace, n.Name})
				}
				break
			}
		}
	}
	return pods
}

// allPods are every pod of the app's tree, at most maxLogPods, for a
// request that names no resource (as argocd app logs without --kind).
func allPods(tree cluster.ResourceTreeOutput) []podRef {
	var pods []podRef
	for _, n := range tree.Nodes {
		if isPod(n) && len(pods) < maxLogPods {
			pods = append(pods, podRef{n.Namespace, n.Name})
		}
	}
	return pods
}

// appInspected authorises perms on the app, then get, and inspects it.
func (s *Server) appInspected(c *echo.Context, perms permsFunc) (inspected, error) {
	name, err := appName(c)
	if err != nil {
		return inspected{}, err
	}
	proj, err := projectParam(c)
	if err != nil {
		return inspected{}, err
	}
	for _, p := range perms(appspec.ResourceKey{}) {
		if err := s.authorize(c, p[0], p[1], rbac.AppObject(proj, name)); err != nil {
			return inspected{}, err
		}
	}
	return s.inspect(c)
}

// logTarget finds the pods a logs request asks for: those of the resource
// it names, or, when it names none, all the app's.
func (s *Server) logTarget(c *echo.Context) (spec appspec.Application, pods []podRef, prefix bool, err error) {
	perms := func(appspec.ResourceKey) [][2]string { return [][2]string{{rbac.ResourceLogs, rbac.ActionGet}} }
	q := c.QueryParams()
	if q.Get("group") == "" && q.Get("kind") == "" && q.Get("namespace") == "" && q.Get("name") == "" {
		in, err := s.appInspected(c, perms)
		if err != nil {
			return spec, nil, false, err
		}
		tree, err := s.opts.Inspector.ResourceTree(c.Request().Context(), cluster.ResourceTreeInput{Target: cluster.TargetFor(in.view.Spec), Manifests: &in.ref})
		if err != nil {
			return spec, nil, false, s.inspectError(c, in, err)
		}
		pods = allPods(tree)
		if len(pods) == 0 {
			return spec, nil, false, problem(http.StatusNotFound, "the application has no pods")
		}
		return in.view.Spec, pods, true, nil
	}
	t, err := s.appResource(c, perms)
	if err != nil {
		return spec, nil, false, err
	}
	if pods = logPods(t); len(pods) == 0 {
		return spec, nil, false, problem(http.StatusNotFound, t.key.String()+" has no pods")
	}
	return t.view.Spec, pods, len(pods) > 1 || t.node.Kind != "Pod", nil
}

// podStream is one pod's open log.
type podStream struct {
	pod string
	rc  io.ReadCloser
}

func (s *Server) appLogs(c *echo.Context) error {
	opts, filter, err := logQuery(c)
	if err != nil {
		return err
	}
	spec, pods, prefix, err := s.logTarget(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	if !opts.Follow {
		ctx, cancel = context.WithTimeout(ctx, s.opts.RequestTimeout)
		defer cancel()
	}
	// Open every stream first, so that a refusal (no such container, no
	// previous instance) is the answer's status.
	var streams []podStream
	defer func() {
		for _, ps := range streams {
			_ = ps.rc.Close()
		}
	}()
	var refused error // the first pod's refusal
	for _, pod := range pods {
		rc, _, err := s.opts.Inspector.PodLogs(ctx, spec.Destination.Server, pod.namespace, pod.name, opts)
		if err != nil {
			refused = cmp.Or(refused, err)
			s.opts.Logger.Debug(msgPodLogsSkipped, "pod", pod.name, "namespace", pod.namespace, "error", err)
			continue
		}
		streams = append(streams, podStream{pod: pod.name, rc: rc})
	}
	if len(streams) == 0 {
		return kubeError(refused)
	}
	var w logWriter
	if strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream") {
		w = sseLogWriter{newSSE(c)}
	} else {
		w = newTextLogWriter(c, prefix)
	}
	lines := make(chan LogLine)
	var wg sync.WaitGroup
	for _, ps := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(ps.rc)
			sc.Buffer(make([]byte, 0, 64<<10), maxLogLine)
			for sc.Scan() {
				select {
				case lines <- LogLine{Pod: ps.pod, Line: sc.Text()}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(lines) }()
	tick := time.NewTicker(streamKeepAlive)
	defer tick.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			if filter.keep(l.Line) && w.write(l) != nil {
				cancel() // the client went away
			}
		case <-tick.C:
			if w.keepAlive() != nil {
				cancel()
			}
		}
	}
}

const msgPodLogsSkipped = "pod logs skipped"

type logWriter interface {
	write(l LogLine) error
	// keepAlive keeps an idle stream open through proxies.
	keepAlive() error
}

// textLogWriter writes lines as text, flushed one by one.
type textLogWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	prefix bool
}

func newTextLogWriter(c *echo.Context, prefix bool) textLogWriter {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/plain; charset=utf-8")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	w := textLogWriter{w: c.Response(), rc: http.NewResponseController(c.Response()), prefix: prefix}
	_ = w.rc.Flush()
	return w
}

func (w textLogWriter) write(l LogLine) error {
	var err error
	if w.prefix {
		_, err = fmt.Fprintf(w.w, "%s: %s\n", l.Pod, l.Line)
	} else {
		_, err = fmt.Fprintln(w.w, l.Line)
	}
	if err != nil {
		return err
	}
	return w.rc.Flush()
}

// keepAlive writes nothing: a text line would be a log line.
func (textLogWriter) keepAlive() error { return nil }

type sseLogWriter struct{ s *sse }

func (w sseLogWriter) keepAlive() error { return w.s.keepAlive() }

func (w sseLogWriter) write(l LogLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return w.s.send(eventLog, b)
}
