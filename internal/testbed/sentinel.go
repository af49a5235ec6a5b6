package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the sentinels of StartRedisSentinel
// watch.
const SentinelMaster = "windlass"

// RedisSentinel is a Redis primary, its replica and three sentinels
// watching them, started by StartRedisSentinel.
type RedisSentinel struct {
	redisNodes
	sentinels []string
}

// redisNodes are the processes of a set of Redis nodes in one dir.
type redisNodes struct {
	dir   string
	nodes map[string]*process // by address
}

// SentinelAddrs are the sentinels' host:port.
func (s *RedisSentinel) SentinelAddrs() []string { return s.sentinels }

// Stop stops every process; see StopDir.
func (s *redisNodes) Stop() error { return StopDir(s.dir) }

// Primary is the address of the primary the sentinels name now.
func (s *RedisSentinel) Primary(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.sentinels[0], DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	a, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return "", fmt.Errorf("ask sentinel for the primary: %w", err)
	}
	return a[0] + ":" + a[1], nil
}

// Kill sends SIGKILL to the Redis node at addr and waits until it is gone:
// a crash, with no chance to hand over.
func (s *redisNodes) Kill(addr string) error {
	p, ok := s.nodes[addr]
	if !ok {
		return fmt.Errorf("no redis node at %s", addr)
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill redis node %s: %w", addr, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("redis node %s (pid %d) still runs after SIGKILL", addr, p.pid)
	}
}

// StartRedisSentinel runs a primary and a replica (redis-server) and three
// sentinels (redis-server --sentinel) on free 127.0.0.1 ports, with dir as
// their working directory, and returns once the sentinels know the replica
// and each other. A sentinel calls the primary down after 1 s without an
// answer, so a failover takes a few seconds.
func StartRedisSentinel(ctx context.Context, dir string) (s *RedisSentinel, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH: run `make deps`: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, StopDir(dir))
		}
	}()
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	s = &RedisSentinel{redisNodes: redisNodes{dir: dir, nodes: map[string]*process{}}}
	primary := host + ":" + strconv.Itoa(ports[0])
	for i, name := range []string{"redis-primary", "redis-replica"} {
		args := []string{"--port", strconv.Itoa(ports[i]), "--bind", host, "--save", "", "--appendonly", "no",
			"--dir", dir, "--dbfilename", name + ".rdb", "--daemonize", "no", "--logfile", ""}
		if i == 1 {
			args = append(args, "--replicaof", host, strconv.Itoa(ports[0]))
		}
		p, err := startProcess(dir, name, bin, args)
		if err != nil {
			return nil, err
		}
		s.nodes[host+":"+strconv.Itoa(ports[i])] = p
	}
	for i, port := range ports[2:] {
		conf := filepath.Join(dir, "sentinel-"+strconv.Itoa(i+1)+".conf")
		text := fmt.Sprintf("port %d\nbind %s\ndir %s\nsentinel monitor %s %s %d 2\n"+
			"sentinel down-after-milliseconds %[4]s 1000\nsentinel failover-timeout %[4]s 10000\n",
			port, host, dir, SentinelMaster, host, ports[0])
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		if _, err := startProcess(dir, "redis-sentinel-"+strconv.Itoa(i+1), bin, []string{conf, "--sentinel"}); err != nil {
			return nil, err
		}
		s.sentinels = append(s.sentinels, host+":"+strconv.Itoa(port))
	}
	// Ready: every sentinel sees the replica and the two other sentinels.
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range s.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second, MaxRetries: -1})
		for {
			m, err := c.Master(ctx, SentinelMaster).Result()
			if err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2" && m["ip"]+":"+m["port"] == primary {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				return nil, fmt.Errorf("sentinel %s not ready: %v %v", a, m, err)
			}
			select {
			case <-ctx.Done():
				_ = c.Close()
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		_ = c.Close()
	}
	return s, nil
}
