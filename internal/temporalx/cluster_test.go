//go:build !nodevserver

package temporalx

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// testDatabase is a database name of the test's own, so that tests share
// one PostgreSQL.
func testDatabase(t *testing.T) string {
	return fmt.Sprintf("t%d_%s", time.Now().UnixNano()%1e9, strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")))
}

func clusterTestConfig(t *testing.T, pg *testbed.Postgres, database string) ClusterServerConfig {
	return ClusterServerConfig{
		Postgres:         PostgresConfig{DSN: pg.DSN(database), Password: pg.Password(), MaxConns: 10},
		FrontendAddr:     "127.0.0.1:0",
		UIAddr:           "off",
		SearchAttributes: map[string]enums.IndexedValueType{testSAName: enums.INDEXED_VALUE_TYPE_KEYWORD},
		Logger:           testLogger(t),
	}
}

func startClusterTestServer(t *testing.T, cfg ClusterServerConfig) *DevServer {
	t.Helper()
	began := time.Now()
	srv, err := StartClusterServer(t.Context(), cfg)
	if err != nil {
		t.Fatalf("StartClusterServer: %v", err)
	}
	t.Logf("cluster server started in %s on %s", time.Since(began), srv.FrontendAddr())
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// pgSQL runs one statement on database as the test bed's user.
func pgSQL(t *testing.T, pg *testbed.Postgres, database, stmt string) {
	t.Helper()
	pgStrings(t, pg, database, stmt)
}

// pgStrings runs one statement on database as the test bed's user and
// returns the first column of its rows.
func pgStrings(t *testing.T, pg *testbed.Postgres, database, query string) []string {
	t.Helper()
	u, err := url.Parse(pg.DSN(database))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(testbed.PostgresUser, pg.Password())
	conn, err := pgconn.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	res := conn.ExecParams(t.Context(), query, nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatalf("%s: %v", query, res.Err)
	}
	var out []string
	for _, row := range res.Rows {
		if len(row) > 0 {
			out = append(out, string(row[0]))
		}
	}
	return out
}

// TestClusterServerOnPostgres runs a workflow on Temporal over PostgreSQL
// and finds it through advanced visibility by a custom search attribute;
// the member advertises its own address (127.0.0.2, another loopback
// address, as a host's own would be) to the ring; a later start with
// another shard count is refused.
func TestClusterServerOnPostgres(t *testing.T) {
	pg := testPostgres(t)
	database := testDatabase(t)
	cfg := clusterTestConfig(t, pg, database)
	cfg.AdvertiseIP, cfg.FrontendAddr = "127.0.0.2", "127.0.0.2:0"
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	srv := startClusterTestServer(t, cfg)
	c := dialTestServer(t, srv)
	w := startTestWorker(t, c)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "greet-pg", TaskQueue: testTaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(testSA.ValueSet("on-postgres")),
	}, greetWorkflow, "postgres")
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello postgres" {
		t.Fatalf("result = %q, %v; want %q", got, err, "hello postgres")
	}
	waitListed(t, c, srv.Namespace(), testSAName+` = "on-postgres"`, "greet-pg")
	// Every service joined the ring at the advertised address.
	addrs := pgStrings(t, pg, database, "SELECT DISTINCT rpc_address FROM cluster_membership")
	if strings.Join(addrs, ",") != "127.0.0.2" {
		t.Errorf("membership addresses = %v, want only the advertised 127.0.0.2", addrs)
	}
	if !strings.HasPrefix(srv.FrontendAddr(), "127.0.0.2:") {
		t.Errorf("frontend = %s, want it on 127.0.0.2", srv.FrontendAddr())
	}
	w.Stop()
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	// A restart in this process does not rejoin the ring ("not enough
	// hosts"); test/scaleout restarts members as processes.

	// The shard count is fixed at the first start.
	cfg.HistoryShards = DefaultHistoryShards * 2
	_, err = StartClusterServer(t.Context(), cfg)
	if !errors.Is(err, ErrShardCountChanged) || !strings.Contains(err.Error(), "created with 4 history shards and --history-shards is 8") {
		t.Errorf("changed shard count: err = %v, want %v naming 4 and 8", err, ErrShardCountChanged)
	}
}

// waitListed waits until a visibility query lists exactly the workflow id.
func waitListed(t *testing.T, c client.Client, namespace, query, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		if err == nil && len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetWorkflowId() == id {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %q: %d executions, %v; want %s", query, len(resp.GetExecutions()), err, id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterServerBadInput: each refusal names what is wrong, and no
// error carries the password.
func TestClusterServerBadInput(t *testing.T) {
	pg := testPostgres(t)
	newer := testDatabase(t) + "_newer"
	// A database whose schema a newer Temporal wrote.
	setup := clusterTestConfig(t, pg, newer)
	tg, err := parsePostgres(setup.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if err := prepareCluster(t.Context(), tg, tg.sqlConfig(tg.database), tg.sqlConfig(tg.visibility), setup, testLogger(t)); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	pgSQL(t, pg, newer, "UPDATE schema_version SET curr_version = '1.99'")

	closed := "127.0.0.1:1" // nothing listens on port 1
	tests := []struct {
		name     string
		pg       PostgresConfig
		wantIs   error
		wantText []string
		// advertise and frontend replace the defaults when set.
		advertise, frontend string
	}{
		{
			name:     "postgres down",
			pg:       PostgresConfig{DSN: "postgres://windlass@" + closed + "/temporal?sslmode=disable", Password: pg.Password()},
			wantIs:   ErrPostgresUnreachable,
			wantText: []string{"postgres://windlass@" + closed + "/temporal"},
		},
		{
			name:     "wrong password",
			pg:       PostgresConfig{DSN: pg.DSN("temporal"), Password: "not-" + pg.Password()},
			wantIs:   ErrPostgresAuth,
			wantText: []string{"wrong user or password", pg.Addr()},
		},
		{
			name:     "newer schema",
			pg:       PostgresConfig{DSN: pg.DSN(newer), Password: pg.Password()},
			wantIs:   ErrSchemaTooNew,
			wantText: []string{"has schema 1.99", "knows up to 1.19"},
		},
		{
			name:     "password in the dsn",
			pg:       PostgresConfig{DSN: "postgres://windlass:" + pg.Password() + "@" + pg.Addr() + "/temporal"},
			wantText: []string{"holds a password"},
		},
		{
			name:      "advertise a host name",
			pg:        PostgresConfig{DSN: pg.DSN("temporal"), Password: pg.Password()},
			advertise: "temporal-1.internal",
			wantText:  []string{`advertise address "temporal-1.internal": want an IP address`},
		},
		{
			name:      "advertise an unspecified address",
			pg:        PostgresConfig{DSN: pg.DSN("temporal"), Password: pg.Password()},
			advertise: "0.0.0.0",
			wantText:  []string{"advertise address 0.0.0.0: want the address other members dial"},
		},
		{
			name:      "frontend not on the advertised address",
			pg:        PostgresConfig{DSN: pg.DSN("temporal"), Password: pg.Password()},
			advertise: "127.0.0.2", frontend: "127.0.0.1:0",
			wantText: []string{"frontend address 127.0.0.1:0: other members reach this process at 127.0.0.2"},
		},
		{
			name:     "no database",
			pg:       PostgresConfig{DSN: "postgres://windlass@" + pg.Addr(), Password: pg.Password()},
			wantText: []string{`database ""`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := clusterTestConfig(t, pg, "unused")
			cfg.Postgres = tt.pg
			if tt.advertise != "" {
				cfg.AdvertiseIP = tt.advertise
			}
			if tt.frontend != "" {
				cfg.FrontendAddr = tt.frontend
			}
			srv, err := StartClusterServer(t.Context(), cfg)
			if err == nil {
				_ = srv.Stop()
				t.Fatal("started; want an error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("err = %v, want %v", err, tt.wantIs)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v, want it to contain %q", err, s)
				}
			}
			if strings.Contains(err.Error(), pg.Password()) {
				t.Errorf("err = %v holds the password", err)
			}
		})
	}
}

// TestClusterServerPostgresOutage stops PostgreSQL under a running server
// with a workflow waiting, and starts it again: the workflow finishes.
func TestClusterServerPostgresOutage(t *testing.T) {
	// A server of its own: this test stops it.
	dir, err := os.MkdirTemp("", "windlass-temporalx-outage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pg, err := testbed.StartPostgres(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	srv := startClusterTestServer(t, clusterTestConfig(t, pg, "temporal"))
	c := dialTestServer(t, srv)
	defer c.Close()
	w := startTestWorker(t, c)
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "across-outage", TaskQueue: testTaskQueue}, signalledGreetWorkflow)
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	waitWorkflowIdle(t, c, run.GetID())

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	err = c.SignalWorkflow(sctx, run.GetID(), run.GetRunID(), "name", "during")
	scancel()
	if err == nil {
		t.Error("signal during the outage succeeded; want an error")
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), "name", "after")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("signal after the outage: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello after" {
		t.Errorf("result = %q, %v; want %q", got, err, "hello after")
	}
}
