package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/windlass-cd/windlass/internal/appspec"
	"github.com/windlass-cd/windlass/workflows"
)

// Sizes of the big app.
const (
	bigAppResources = 10_000
	bigAppPerFile   = 100
	// maxEventPayload is a quarter of Temporal's 2 MiB blob limit.
	maxEventPayload = 512 << 10
)

// bigAppName is the i-th ConfigMap's name: 248 characters, a valid DNS
// subdomain.
func bigAppName(i int) string {
	return strings.Repeat("long-name-", 24) + fmt.Sprintf("cm-%05d", i)
}

// An app of 10,000 ConfigMaps with long names syncs, GET lists every one
// of its resources, it deletes, and no event in the history of its
// workflow or its sync carries more than a quarter of Temporal's limit.
func TestBigApp(t *testing.T) {
	if testing.Short() {
		t.Skip("applies 10,000 objects")
	}
	if errs := validation.IsDNS1123Subdomain(bigAppName(0)); len(errs) > 0 || len(bigAppName(0)) < 245 {
		t.Fatalf("name %q: %v", bigAppName(0), errs)
	}
	begin := time.Now()
	ns, name := uniq("big"), uniq("bigapp")
	t.Cleanup(func() { _ = bed.kube.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}) })
	repoURL, work := newRepo(t, name)
	files := map[string]string{}
	for f := range bigAppResources / bigAppPerFile {
		var b strings.Builder
		for i := f * bigAppPerFile; i < (f+1)*bigAppPerFile; i++ {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  index: %q\n", bigAppName(i), fmt.Sprint(i))
		}
		files[fmt.Sprintf("big/cm-%03d.yaml", f)] = b.String()
	}
	sha := push(t, work, files)
	if code := call(t, http.MethodPost, "/api/v1/applications", appBody(name, repoURL, "big", ns), nil); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	created := time.Now()

	var res workflows.SyncResult
	if code := call(t, http.MethodPost, "/api/v1/applications/"+name+"/sync", nil, &res); code != http.StatusOK || res.Phase != workflows.PhaseSucceeded {
		t.Fatalf("sync: status %d, phase %s: %s", code, res.Phase, res.Message)
	}
	synced := time.Now()
	var v workflows.AppView
	eventually(t, 5*time.Minute, "app Synced and Healthy", func() (bool, string) {
		v = workflows.AppView{}
		call(t, http.MethodGet, "/api/v1/applications/"+name, nil, &v)
		st := v.Status
		return st.Sync == appspec.SyncSynced && st.Health == appspec.HealthHealthy && st.SHA == sha && len(st.Resources) == bigAppResources,
			fmt.Sprintf("%s/%s at %s, %d resources (%d omitted): %s", st.Sync, st.Health, st.SHA, len(st.Resources), st.OmittedResources, st.Message)
	})
	healthy := time.Now()
	seen := map[string]bool{}
	for _, r := range v.Status.Resources {
		seen[r.Name] = r.Kind == "ConfigMap" && r.Namespace == ns
	}
	for i := range bigAppResources {
		if !seen[bigAppName(i)] {
			t.Fatalf("GET does not list ConfigMap %d", i)
		}
	}
	if v.Status.OmittedResources != 0 || v.Status.ResourcesRef != "" {
		t.Fatalf("GET: %d omitted, ref %q; want the full list", v.Status.OmittedResources, v.Status.ResourcesRef)
	}
	var rs []appspec.ResourceStatus
	if code := call(t, http.MethodGet, "/api/v1/applications/"+name+"/resources", nil, &rs); code != http.StatusOK || len(rs) != bigAppResources {
		t.Fatalf("GET resources: status %d, %d resources", code, len(rs))
	}

	t.Logf("push and create %s, sync %s, Synced and Healthy after %s",
		created.Sub(begin).Round(time.Second), synced.Sub(created).Round(time.Second), healthy.Sub(synced).Round(time.Second))

	var del workflows.DeleteResult
	if code := call(t, http.MethodDelete, "/api/v1/applications/"+name, nil, &del); code != http.StatusOK {
		t.Errorf("delete: status %d: %+v", code, del)
	}
	t.Logf("delete %s, %d resources listed; %s in all", time.Since(healthy).Round(time.Second), len(del.Resources), time.Since(begin).Round(time.Second))

	for _, id := range []string{workflows.AppWorkflowID(appspec.DefaultProject, name), res.ID} {
		runs, events := 0, []sizedEvent{}
		for run := ""; ; runs++ {
			evs, prev := runHistory(t, id, run)
			events = append(events, evs...)
			if prev == "" {
				break
			}
			run = prev
		}
		count := map[string]int{}
		for _, e := range events {
			count[e.typ]++
		}
		slices.SortFunc(events, func(a, b sizedEvent) int { return b.bytes - a.bytes })
		top := events[:min(6, len(events))]
		t.Logf("%s: %d runs, %d events %v; largest payloads: %s", id, runs+1, len(events), count, top)
		if len(top) > 0 && top[0].bytes >= maxEventPayload {
			t.Errorf("%s: event %s carries %d bytes of payloads, want below %d", id, top[0].typ, top[0].bytes, maxEventPayload)
		}
	}
}

// sizedEvent is a history event's type and the bytes of its payloads.
type sizedEvent struct {
	typ   string
	bytes int
}

func (e sizedEvent) String() string { return fmt.Sprintf("%s %d KiB", e.typ, (e.bytes+1023)/1024) }

// runHistory sizes the events of one run of a workflow (run "": the
// latest) and returns the run it continued, if any.
func runHistory(t *testing.T, id, run string) ([]sizedEvent, string) {
	t.Helper()
	var (
		out  []sizedEvent
		prev string
	)
	it := bed.temporal.GetWorkflowHistory(t.Context(), id, run, false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			prev = a.GetContinuedExecutionRunId()
		}
		out = append(out, sizedEvent{typ: strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"), bytes: payloadBytes(eventAttributes(ev))})
	}
	return out, prev
}

// eventAttributes is the attributes message of ev.
func eventAttributes(ev *historypb.HistoryEvent) protoreflect.Message {
	m := ev.ProtoReflect()
	if f := m.WhichOneof(m.Descriptor().Oneofs().ByName("attributes")); f != nil {
		return m.Get(f).Message()
	}
	return m
}

// payloadBytes sums the encoded size of every Payload within m.
func payloadBytes(m protoreflect.Message) int {
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		return proto.Size(p)
	}
	n := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					n += payloadBytes(mv.Message())
					return true
				})
			}
		case fd.Message() == nil:
		case fd.IsList():
			for i := range v.List().Len() {
				n += payloadBytes(v.List().Get(i).Message())
			}
		default:
			n += payloadBytes(v.Message())
		}
		return true
	})
	return n
}
