package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const redisAddrFile = "redis.addr"

// Redis is a redis-server started by StartRedis.
type Redis struct {
	dir  string
	addr string
}

// Addr is the server's host:port on 127.0.0.1.
func (r *Redis) Addr() string { return r.addr }

// Stop stops the server; see StopDir.
func (r *Redis) Stop() error { return StopDir(r.dir) }

// Start starts a server that Stop stopped again, empty, at the same
// address: an outage and its end, for the clients of the first one.
func (r *Redis) Start(ctx context.Context) error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not found on PATH: %w", err)
	}
	if err := prepareDir(r.dir); err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	_, err = startRedisOnce(ctx, r.dir, bin, p)
	return err
}

// StartRedis runs redis-server (Debian package redis-server) on a free
// 127.0.0.1 port without persistence, with dir as its working directory. It
// returns once PING answers. Like the cluster, the server runs detached: its
// pid is recorded in <dir>/pids, its log is <dir>/logs/redis-server.log and
// its address is written to <dir>/redis.addr. Use a dir of its own: StopDir
// on it stops everything recorded there.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH: run `make deps` (installs the Debian package redis-server with apt-get): %w", err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve redis dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create redis dir: %w", err)
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		r, err := startRedisOnce(ctx, dir, bin, 0)
		if err == nil {
			return r, nil
		}
		if errors.Is(err, errPortInUse) && attempt < startAttempts && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// startRedisOnce starts redis-server on port (0: a free one).
func startRedisOnce(ctx context.Context, dir, bin string, port int) (r *Redis, err error) {
	if port == 0 {
		pp, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		port = pp[0]
	}
	addr := host + ":" + strconv.Itoa(port)
	p, err := startProcess(dir, "redis-server", bin, []string{
		"--port", strconv.Itoa(port), "--bind", host,
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", "",
	})
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

	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer client.Close()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if done, werr := p.exited(); done {
			return nil, withLogTail(fmt.Errorf("redis-server exited: %w", werr), p)
		}
		// Dial first: go-redis logs every failed dial, which is noise here.
		var d net.Dialer
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var perr error
		if conn, err := d.DialContext(cctx, "tcp", addr); err != nil {
			perr = err
		} else {
			_ = conn.Close()
			perr = client.Ping(cctx).Err()
		}
		cancel()
		if perr == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, withLogTail(fmt.Errorf("timed out waiting for redis-server PING: %w", perr), p)
		}
		select {
		case <-ctx.Done():
			return nil, withLogTail(fmt.Errorf("waiting for redis-server: %w", ctx.Err()), p)
		case <-tick.C:
		}
	}
	if err := os.WriteFile(filepath.Join(dir, redisAddrFile), []byte(addr+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write redis address: %w", err)
	}
	return &Redis{dir: dir, addr: addr}, nil
}
