package testbed

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgExec runs sql on p's database "postgres" as PostgresUser with password.
func pgExec(ctx context.Context, p *Postgres, password, sql string) ([]byte, error) {
	u, err := url.Parse(p.DSN("postgres"))
	if err != nil {
		return nil, err
	}
	u.User = url.UserPassword(PostgresUser, password)
	conn, err := pgconn.Connect(ctx, u.String())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || len(res[len(res)-1].Rows) == 0 {
		return nil, nil
	}
	return res[len(res)-1].Rows[0][0], nil
}

func TestPostgres(t *testing.T) {
	ctx := t.Context()
	// Not t.TempDir: as root, the server's user must reach the dir.
	dir, err := os.MkdirTemp("", "windlass-testbed-postgres-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p, err := StartPostgres(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want a 127.0.0.1 address", p.Addr())
	}
	if strings.Contains(p.DSN("x"), p.Password()) {
		t.Errorf("DSN %q holds the password", p.DSN("x"))
	}
	if _, err := pgExec(ctx, p, p.Password(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before')"); err != nil {
		t.Fatal(err)
	}
	if _, err := pgExec(ctx, p, "wrong", "SELECT 1"); err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("wrong password: err = %v, want password authentication failed", err)
	}

	// An outage and its end keep the data and the address.
	addr := p.Addr()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgExec(ctx, p, p.Password(), "SELECT 1"); err == nil {
		t.Fatal("query succeeded while the server was stopped")
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := pgExec(ctx, p, p.Password(), "SELECT v FROM kept")
	if err != nil || string(got) != "before" {
		t.Errorf("after restart: %q, %v; want %q", got, err, "before")
	}
	if p.Addr() != addr {
		t.Errorf("address changed from %s to %s", addr, p.Addr())
	}

	l, err := LoadPostgres(dir)
	if err != nil || l.Addr() != p.Addr() || l.Password() != p.Password() {
		t.Errorf("LoadPostgres = %+v, %v", l, err)
	}
}
