package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a Redis Cluster of three primaries, each with a replica,
// started by StartRedisCluster.
type RedisCluster struct {
	redisNodes
	seeds []string
}

// Addrs are the primaries' host:port at start, the seeds for a client.
func (c *RedisCluster) Addrs() []string { return c.seeds }

// StartRedisCluster runs six redis-server --cluster-enabled nodes on free
// 127.0.0.1 ports, with dir as their working directory: three primaries
// sharing the slots and a replica of each, joined with CLUSTER MEET,
// ADDSLOTSRANGE and REPLICATE. It returns once every node reports the
// cluster ok. A node is called failed after 1 s without an answer.
func StartRedisCluster(ctx context.Context, dir string) (*RedisCluster, error) {
	// A free port can be taken by another test's server before a node
	// binds it, and that node never answers: start again on new ports.
	var errs []error
	for range 3 {
		rc, err := startRedisCluster(ctx, dir)
		if err == nil || ctx.Err() != nil || !errors.Is(err, errNodeDown) {
			return rc, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// errNodeDown is a cluster node that never answered.
var errNodeDown = errors.New("a node never answered")

func startRedisCluster(ctx context.Context, dir string) (rc *RedisCluster, err error) {
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
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	rc = &RedisCluster{redisNodes: redisNodes{dir: dir, nodes: map[string]*process{}}}
	var clients []*redis.Client
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	for i, port := range ports {
		name := "redis-cluster-" + strconv.Itoa(i+1)
		p, err := startProcess(dir, name, bin, []string{"--port", strconv.Itoa(port), "--bind", host,
			"--save", "", "--appendonly", "no", "--dir", dir, "--dbfilename", name + ".rdb",
			"--cluster-enabled", "yes", "--cluster-config-file", name + ".nodes", "--cluster-node-timeout", "1000",
			"--daemonize", "no", "--logfile", ""})
		if err != nil {
			return nil, err
		}
		addr := host + ":" + strconv.Itoa(port)
		rc.nodes[addr] = p
		if i < 3 {
			rc.seeds = append(rc.seeds, addr)
		}
		clients = append(clients, redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1}))
	}
	deadline := time.Now().Add(30 * time.Second)
	wait := func(what string, ok func() bool) error {
		for !ok() {
			if time.Now().After(deadline) {
				return fmt.Errorf("redis cluster: timed out waiting for %s", what)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		return nil
	}
	ids := make([]string, len(clients))
	for i, c := range clients {
		if err := wait("node "+c.Options().Addr, func() bool {
			id, err := c.Do(ctx, "CLUSTER", "MYID").Text()
			ids[i] = id
			return err == nil
		}); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", errNodeDown, err)
		}
	}
	for _, port := range ports[1:] {
		if err := clients[0].ClusterMeet(ctx, host, strconv.Itoa(port)).Err(); err != nil {
			return nil, fmt.Errorf("cluster meet: %w", err)
		}
	}
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for i, r := range ranges {
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r[0], r[1]).Err(); err != nil {
			return nil, fmt.Errorf("cluster addslotsrange: %w", err)
		}
	}
	for i := 3; i < 6; i++ {
		c, primary := clients[i], ids[i-3]
		if err := wait("replica "+c.Options().Addr, func() bool {
			return c.Do(ctx, "CLUSTER", "REPLICATE", primary).Err() == nil
		}); err != nil {
			return nil, err
		}
	}
	for _, c := range clients {
		if err := wait("cluster ok on "+c.Options().Addr, func() bool {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:6") {
				return false
			}
			repl, err := c.Info(ctx, "replication").Result()
			return err == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up"))
		}); err != nil {
			return nil, err
		}
	}
	return rc, nil
}
