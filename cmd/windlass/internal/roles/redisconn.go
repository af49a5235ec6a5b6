package roles

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisConn says how a role reaches Redis beyond --redis-address, which
// may list several host:port: the seeds of a cluster, or the sentinels.
// Windlass reads and writes one key per command (a pipeline may hold
// several), so cluster mode is safe: TestRedisClusterFailover.
type redisConn struct {
	// SentinelMaster is the master name the sentinels at the addresses
	// watch; Cluster says the addresses are Redis Cluster seeds.
	SentinelMaster string
	Cluster        bool
	DB             int
	Username       string
	// PasswordFile holds the password; else $WINDLASS_REDIS_PASSWORD (or
	// $REDIS_PASSWORD). Never a flag value, never logged.
	PasswordFile string
	TLS          bool
	password     string
	// sentinelPassword ($WINDLASS_REDIS_SENTINEL_PASSWORD) defaults to
	// the password.
	sentinelPassword string
	// addr points at the role's --redis-address, for validation.
	addr *string
}

func bindRedisConn(fs *flag.FlagSet, r *redisConn, addr *string) {
	r.addr = addr
	fs.StringVar(&r.SentinelMaster, "redis-sentinel-master", env("REDIS_SENTINEL_MASTER", ""), "Redis Sentinel: the master's name; --redis-address then lists the sentinels (env WINDLASS_REDIS_SENTINEL_MASTER)")
	fs.BoolVar(&r.Cluster, "redis-cluster", envBool("WINDLASS_REDIS_CLUSTER", false), "Redis Cluster: --redis-address lists seed nodes (env WINDLASS_REDIS_CLUSTER)")
	fs.IntVar(&r.DB, "redis-db", envInt("REDIS_DB", 0), "Redis database number, not with --redis-cluster (env WINDLASS_REDIS_DB)")
	fs.StringVar(&r.Username, "redis-username", env("REDIS_USERNAME", ""), "Redis ACL user (env WINDLASS_REDIS_USERNAME)")
	fs.StringVar(&r.PasswordFile, "redis-password-file", env("REDIS_PASSWORD_FILE", ""), "file holding the Redis password (env WINDLASS_REDIS_PASSWORD_FILE; or the password itself in env WINDLASS_REDIS_PASSWORD)")
	fs.BoolVar(&r.TLS, "redis-tls", envBool("WINDLASS_REDIS_TLS", false), "connect to Redis over TLS (env WINDLASS_REDIS_TLS)")
	r.password = envFirst("", "WINDLASS_REDIS_PASSWORD", "REDIS_PASSWORD")
	r.sentinelPassword = os.Getenv("WINDLASS_REDIS_SENTINEL_PASSWORD")
}

// addrs splits a comma-separated --redis-address.
func redisAddrs(s string) []string {
	var out []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (r redisConn) validate() error {
	var errs []error
	addrs := []string{}
	if r.addr != nil {
		addrs = redisAddrs(*r.addr)
	}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("redis-address %q: %w", a, err))
		}
	}
	if r.SentinelMaster != "" && r.Cluster {
		errs = append(errs, errors.New("redis-sentinel-master and redis-cluster exclude each other"))
	}
	if len(addrs) == 0 && (r.SentinelMaster != "" || r.Cluster) {
		errs = append(errs, errors.New("redis-sentinel-master and redis-cluster need --redis-address"))
	}
	if len(addrs) > 1 && r.SentinelMaster == "" && !r.Cluster {
		errs = append(errs, errors.New("several redis addresses need --redis-sentinel-master or --redis-cluster"))
	}
	if r.Cluster && r.DB != 0 {
		errs = append(errs, errors.New("redis-db must be 0 with redis-cluster"))
	}
	if r.DB < 0 {
		errs = append(errs, errors.New("redis-db must not be negative"))
	}
	if r.PasswordFile != "" {
		if r.password != "" {
			errs = append(errs, errors.New("give the Redis password in WINDLASS_REDIS_PASSWORD or in redis-password-file, not both"))
		} else if _, err := os.ReadFile(r.PasswordFile); err != nil {
			errs = append(errs, fmt.Errorf("redis-password-file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// client makes the Redis client for addr (a comma-separated list): a
// single node, a sentinel-backed failover client or a cluster client.
func (r redisConn) client(addr string) (redis.UniversalClient, error) {
	o := &redis.UniversalOptions{
		Addrs: redisAddrs(addr), MasterName: r.SentinelMaster, IsClusterMode: r.Cluster,
		DB: r.DB, Username: r.Username, Password: r.password,
	}
	if r.PasswordFile != "" {
		b, err := os.ReadFile(r.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("redis-password-file: %w", err)
		}
		o.Password = strings.TrimRight(string(b), "\r\n")
	}
	if r.SentinelMaster != "" {
		o.SentinelUsername, o.SentinelPassword = o.Username, o.Password
		if r.sentinelPassword != "" {
			o.SentinelPassword = r.sentinelPassword
		}
	}
	if r.TLS {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if r.Cluster {
		co := o.Cluster()
		co.ClusterStateReloadInterval = clusterStateReload
		return redis.NewClusterClient(co), nil
	}
	return redis.NewUniversalClient(o), nil
}

// clusterStateReload is how old a cluster client's slot map may grow while
// it is used. A dead primary answers no MOVED, so without a reload the
// client would keep dialling it after its replica took over, for go-redis's
// default of 60 s: every session whose keys it held refused meanwhile.
const clusterStateReload = 2 * time.Second

// describe is the Redis setup for the log, with no secret in it.
func (r redisConn) describe(addr string) []any {
	mode := "single"
	switch {
	case r.SentinelMaster != "":
		mode = "sentinel:" + r.SentinelMaster
	case r.Cluster:
		mode = "cluster"
	}
	return []any{"redis", addr, "redis_mode", mode, "redis_tls", r.TLS, "redis_password", r.password != "" || r.PasswordFile != ""}
}
