package scaleout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/windlass-cd/windlass/test/bench/harness"
	"github.com/windlass-cd/windlass/workflows"
)

// Issue 28: one of the two Temporal processes is killed with SIGKILL while
// a fleet syncs. Ringpop hands its history shards and matching queues to
// the survivor; every app converges, every sync completes exactly once and
// no sync ID is lost or duplicated.
func TestKillTemporalDuringSyncs(t *testing.T) {
	const n = 16
	bed.mu.Lock()
	if len(bed.members) == 0 {
		bed.mu.Unlock()
		t.Fatal("no second Temporal process to kill")
	}
	victim := bed.members[0]
	bed.members = bed.members[1:]
	bed.mu.Unlock()

	prefix := fmt.Sprintf("tk%d", time.Now().UnixNano()%1e6)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	cleanupNamespaces(t, prefix+"-")
	jobs := watchHookJobs(t, prefix)
	repo := newRepo(t, prefix, appFiles("app", false))

	start := time.Now()
	createAll(t, names, repo)
	var killedAfter = -1
	eventually(t, 4*time.Minute, 500*time.Millisecond, "every app Synced and Healthy", func() (bool, string) {
		synced := countApps(t, prefix, "&sync=Synced&health=Healthy")
		if killedAfter < 0 && synced >= n/4 {
			victim.Kill()
			killedAfter = synced
			t.Logf("killed %s (pid %d) with %d of %d apps synced, after %s", victim.Name, victim.PID(), synced, n, since(start))
		}
		return synced == n, fmt.Sprintf("%d of %d", synced, n)
	})
	t.Logf("%d apps Synced and Healthy in %s; %s killed after %d", n, since(start), victim.Name, killedAfter)

	want := map[string][]string{}
	for _, name := range names {
		want[name] = []string{workflows.SyncWorkflowID("default", name, 1)}
	}
	if got := checkSyncs(t, jobs, prefix, names, want); got != n {
		t.Errorf("%d syncs, want %d", got, n)
	}

	// The cluster takes a new member again, for the tests that follow.
	var p *harness.Proc
	var err error
	if p, err = startTemporalMember(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s joined the cluster", p.Name)

	// The database password is read from a file and never logged.
	logs, err := filepath.Glob(filepath.Join(bed.tmp, "logs", "*"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("process logs: %v, %v", logs, err)
	}
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), bed.pgPassword) {
			t.Errorf("%s holds the PostgreSQL password", f)
		}
	}
}
