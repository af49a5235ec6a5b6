package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Files StartPostgres writes into its dir.
const (
	postgresAddrFile     = "postgres.addr"
	postgresPasswordFile = "postgres.password"
	postgresDataDir      = "data"
)

// PostgresUser is the superuser StartPostgres creates.
const PostgresUser = "windlass"

// EnvPostgresDir names the dir of a running PostgreSQL (hack/cluster
// postgres-up) that SharedPostgres loads instead of starting one.
const EnvPostgresDir = "WINDLASS_TEST_POSTGRES_DIR"

// Postgres is a PostgreSQL server started by StartPostgres.
type Postgres struct {
	dir      string
	addr     string
	password string
}

// Addr is the server's host:port on 127.0.0.1.
func (p *Postgres) Addr() string { return p.addr }

// Password is PostgresUser's password.
func (p *Postgres) Password() string { return p.password }

// PasswordFile is the file that holds Password.
func (p *Postgres) PasswordFile() string { return filepath.Join(p.dir, postgresPasswordFile) }

// DSN is a URL for database on this server, as PostgresUser and without
// the password.
func (p *Postgres) DSN(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User(PostgresUser), Host: p.addr, Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// Stop stops the server (a fast shutdown: clients are disconnected); the
// data stays, so Start brings it back.
func (p *Postgres) Stop() error { return StopDir(p.dir) }

// Start starts a server that Stop stopped again, at the same address and
// with the same data: an outage and its end, for its clients.
func (p *Postgres) Start(ctx context.Context) error {
	if err := prepareDir(p.dir); err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(p.addr)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	_, err = startPostgresOnce(ctx, p.dir, p.password, n)
	return err
}

// LoadPostgres attaches to a server that StartPostgres runs in dir.
func LoadPostgres(dir string) (*Postgres, error) {
	addr, err := os.ReadFile(filepath.Join(dir, postgresAddrFile))
	if err != nil {
		return nil, fmt.Errorf("read postgres address: %w", err)
	}
	pw, err := os.ReadFile(filepath.Join(dir, postgresPasswordFile))
	if err != nil {
		return nil, fmt.Errorf("read postgres password: %w", err)
	}
	return &Postgres{dir: dir, addr: strings.TrimSpace(string(addr)), password: strings.TrimSpace(string(pw))}, nil
}

// StartPostgres initialises a new PostgreSQL cluster in <dir>/data (initdb)
// and runs it on a free 127.0.0.1 port, with TCP only and password
// (scram-sha-256) authentication for PostgresUser, whose random password is
// in <dir>/postgres.password. fsync is off: this is a test server. Run as
// root, the server runs as the user "postgres" (or "nobody"), since
// PostgreSQL refuses root; dir is then made world-readable, and its parents
// must be searchable by that user. Like Redis, the server runs detached:
// its pid is in <dir>/pids, its log in <dir>/logs/postgres.log and its
// address in <dir>/postgres.addr. StopDir on dir stops it.
func StartPostgres(ctx context.Context, dir string) (*Postgres, error) {
	initdb, err := postgresBin("initdb")
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("resolve postgres dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create postgres dir: %w", err)
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, postgresDataDir)
	if err := os.RemoveAll(data); err != nil {
		return nil, fmt.Errorf("remove old postgres data: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, logsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	password, err := randomPassword()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, postgresPasswordFile), []byte(password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write postgres password: %w", err)
	}
	// initdb reads the password from a file its user can read; it goes
	// once the cluster exists.
	pwfile := filepath.Join(dir, "initdb.pw")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write initdb password file: %w", err)
	}
	defer os.Remove(pwfile)
	if cred != nil {
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open postgres dir: %w", err)
		}
		if err := os.Mkdir(data, 0o700); err != nil {
			return nil, fmt.Errorf("create postgres data dir: %w", err)
		}
		for _, f := range []string{data, pwfile} {
			if err := os.Chown(f, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("hand %s to the postgres user: %w", f, err)
			}
		}
	}
	cmd := exec.CommandContext(ctx, initdb, "-D", data, "-U", PostgresUser, "--pwfile", pwfile,
		"--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	closeInheritedFDs()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb %s: %w\n%s", data, err, out)
	}
	for attempt := 1; ; attempt++ {
		p, err := startPostgresOnce(ctx, dir, password, 0)
		if err == nil {
			return p, nil
		}
		if errors.Is(err, errPortInUse) && attempt < startAttempts && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// startPostgresOnce runs postgres on the cluster in <dir>/data, on port (0:
// a free one), and waits until PostgresUser can log in.
func startPostgresOnce(ctx context.Context, dir, password string, port int) (pg *Postgres, err error) {
	bin, err := postgresBin("postgres")
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	if port == 0 {
		pp, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		port = pp[0]
	}
	addr := host + ":" + strconv.Itoa(port)
	p, err := startProcessAs(dir, "postgres", bin, []string{
		"-D", filepath.Join(dir, postgresDataDir), "-h", host, "-p", strconv.Itoa(port),
		"-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=400",
	}, cred)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err == nil {
			return
		}
		if serr := StopDir(dir); serr != nil {
			err = errors.Join(err, serr)
		}
		if isAddrInUse(logTail(p.logPath, 20)) {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
	}()
	pg = &Postgres{dir: dir, addr: addr, password: password}
	dsn, err := url.Parse(pg.DSN("postgres"))
	if err != nil {
		return nil, err
	}
	dsn.User = url.UserPassword(PostgresUser, password)
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if done, werr := p.exited(); done {
			return nil, withLogTail(fmt.Errorf("postgres exited: %w", werr), p)
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, cerr := pgconn.Connect(cctx, dsn.String())
		if cerr == nil {
			cerr = conn.Exec(cctx, "SELECT 1").Close()
			_ = conn.Close(cctx)
		}
		cancel()
		if cerr == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, withLogTail(fmt.Errorf("timed out waiting for postgres: %w", cerr), p)
		}
		select {
		case <-ctx.Done():
			return nil, withLogTail(fmt.Errorf("waiting for postgres: %w", ctx.Err()), p)
		case <-tick.C:
		}
	}
	if err := os.WriteFile(filepath.Join(dir, postgresAddrFile), []byte(addr+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write postgres address: %w", err)
	}
	return pg, nil
}

// postgresBin finds a PostgreSQL server binary on PATH, else in Debian's
// /usr/lib/postgresql/<version>/bin (the newest version).
func postgresBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/lib/postgresql/*/bin: run `make deps` (installs the Debian package postgresql)", name)
}

// pgVersion is the major version in /usr/lib/postgresql/<version>/bin.
func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// postgresCredential is the user PostgreSQL runs as: nil (the caller) unless
// the caller is root, which PostgreSQL refuses.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and no user postgres or nobody to run PostgreSQL as")
}

func randomPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make postgres password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// SharedPostgres returns the PostgreSQL of $WINDLASS_TEST_POSTGRES_DIR,
// left running, or starts a private one; the cleanup stops and removes only
// what it started. Call it once per test binary, from TestMain.
func SharedPostgres(ctx context.Context, name string) (*Postgres, func(), error) {
	if dir := os.Getenv(EnvPostgresDir); dir != "" {
		p, err := LoadPostgres(dir)
		if err != nil {
			return nil, func() {}, fmt.Errorf("load postgres from $%s: %w", EnvPostgresDir, err)
		}
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "windlass-"+safeName(name)+"-postgres-")
	if err != nil {
		return nil, func() {}, fmt.Errorf("create postgres dir: %w", err)
	}
	p, err := StartPostgres(ctx, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, func() {}, err
	}
	return p, func() {
		_ = p.Stop()
		_ = os.RemoveAll(dir)
	}, nil
}
