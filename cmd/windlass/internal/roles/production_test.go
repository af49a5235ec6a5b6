package roles

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// writeCert writes a self-signed certificate and its key as PEM files.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "windlass-worker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	return certFile, keyFile
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// clearProdEnv unsets the variables the production flags read.
func clearProdEnv(t *testing.T) {
	for _, v := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_TLS", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA",
		"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_API_KEY", "TEMPORAL_API_KEY_FILE", "WINDLASS_TEMPORAL_API_KEY",
		"WINDLASS_REDIS_PASSWORD", "REDIS_PASSWORD", "WINDLASS_TASK_QUEUES", "WINDLASS_SECRET_STORE", "WINDLASS_REDIS_CLUSTER"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("WINDLASS_TEMPORAL_ADDRESS", "127.0.0.1:7233")
}

func TestProductionFlags(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	notPEM, keyFile, emptyKey := filepath.Join(dir, "ca.txt"), filepath.Join(dir, "apikey"), filepath.Join(dir, "empty")
	writeFile(t, notPEM, "not a certificate")
	writeFile(t, keyFile, "secret-api-key\n")
	writeFile(t, emptyKey, "\n")
	worker := func(args ...string) (prodSettings, error) {
		c, err := loadWorkerConfig(append([]string{"--redis-address", "127.0.0.1:6379"}, args...))
		return c.prod, err
	}
	server := func(args ...string) (prodSettings, error) {
		c, err := loadServerConfig(append([]string{"--redis-address", "127.0.0.1:6379"}, args...))
		return c.prod, err
	}
	tests := []struct {
		name    string
		env     map[string]string
		load    func(...string) (prodSettings, error)
		args    []string
		wantErr string
		check   func(t *testing.T, p prodSettings)
	}{
		{name: "worker defaults", load: worker, check: func(t *testing.T, p prodSettings) {
			if d := cmp.Diff([]string{"windlass"}, p.taskQueues()); d != "" {
				t.Errorf("task queues (-want +got):\n%s", d)
			}
			if p.MetricsAddr != ":9090" || p.SecretStore != "kubernetes" {
				t.Errorf("metrics %q, secret store %q", p.MetricsAddr, p.SecretStore)
			}
			if c, _ := p.Temporal.tlsConfig(); c != nil || p.Temporal.credentials() != nil {
				t.Error("plaintext by default, got TLS or credentials")
			}
		}},
		{name: "worker task queues repeat and split", load: worker, args: []string{"--task-queue", "a", "--task-queue", "b,c"}, check: func(t *testing.T, p prodSettings) {
			if d := cmp.Diff([]string{"a", "b", "c"}, p.taskQueues()); d != "" {
				t.Errorf("task queues (-want +got):\n%s", d)
			}
		}},
		{name: "task queues from env", env: map[string]string{"WINDLASS_TASK_QUEUES": "x,y"}, load: worker, check: func(t *testing.T, p prodSettings) {
			if d := cmp.Diff([]string{"x", "y"}, p.taskQueues()); d != "" {
				t.Errorf("task queues (-want +got):\n%s", d)
			}
		}},
		{name: "server metrics on the API listener", load: server, check: func(t *testing.T, p prodSettings) {
			if p.MetricsAddr != "" {
				t.Errorf("metrics address %q, want none", p.MetricsAddr)
			}
		}},
		{name: "server takes one task queue", load: server, args: []string{"--task-queue", "a,b"}, wantErr: "one task queue"},
		{name: "bad secret store", load: worker, args: []string{"--secret-store", "vault"}, wantErr: `secret-store "vault"`},
		{name: "memory secret store", load: server, args: []string{"--secret-store", "memory"}},
		{name: "bad metrics address", load: worker, args: []string{"--metrics-address", "9090"}, wantErr: "metrics-address"},
		{name: "several redis addresses need a mode", load: worker, args: []string{"--redis-address", "a:1,b:2"}, wantErr: "several redis addresses"},
		{name: "sentinel", load: worker, args: []string{"--redis-address", "a:26379, b:26379", "--redis-sentinel-master", "mymaster"}},
		{name: "cluster", load: server, args: []string{"--redis-address", "a:6379,b:6379", "--redis-cluster"}},
		{name: "sentinel and cluster", load: worker, args: []string{"--redis-address", "a:1", "--redis-cluster", "--redis-sentinel-master", "m"}, wantErr: "exclude each other"},
		{name: "cluster has no db", load: worker, args: []string{"--redis-cluster", "--redis-db", "2"}, wantErr: "redis-db must be 0"},
		{name: "bad redis address", load: worker, args: []string{"--redis-address", "a:1,nohost", "--redis-cluster"}, wantErr: `redis-address "nohost"`},
		{name: "mtls", load: worker, args: []string{"--temporal-tls-cert", cert, "--temporal-tls-key", key, "--temporal-tls-ca", cert, "--temporal-tls-server-name", "temporal.example"},
			check: func(t *testing.T, p prodSettings) {
				c, err := p.Temporal.tlsConfig()
				if err != nil || c == nil || len(c.Certificates) != 1 || c.RootCAs == nil || c.ServerName != "temporal.example" {
					t.Errorf("tls config %+v, %v", c, err)
				}
			}},
		{name: "mtls from env", env: map[string]string{"TEMPORAL_TLS_CERT": cert, "TEMPORAL_TLS_KEY": key}, load: worker, check: func(t *testing.T, p prodSettings) {
			if c, err := p.Temporal.tlsConfig(); err != nil || c == nil || len(c.Certificates) != 1 {
				t.Errorf("tls config %+v, %v", c, err)
			}
		}},
		{name: "cert without key", load: worker, args: []string{"--temporal-tls-cert", cert}, wantErr: "go together"},
		{name: "unreadable cert", load: worker, args: []string{"--temporal-tls-cert", cert + ".missing", "--temporal-tls-key", key}, wantErr: "temporal client certificate"},
		{name: "CA without PEM", load: server, args: []string{"--temporal-tls-ca", notPEM}, wantErr: "no PEM certificate"},
		{name: "api key from env means TLS", env: map[string]string{"TEMPORAL_API_KEY": "secret-api-key"}, load: worker, check: func(t *testing.T, p prodSettings) {
			if c, _ := p.Temporal.tlsConfig(); c == nil || p.Temporal.credentials() == nil {
				t.Error("an API key needs TLS and credentials")
			}
		}},
		{name: "api key file", load: server, args: []string{"--temporal-api-key-file", keyFile}, check: func(t *testing.T, p prodSettings) {
			if p.Temporal.credentials() == nil {
				t.Error("no credentials")
			}
		}},
		{name: "api key twice", env: map[string]string{"TEMPORAL_API_KEY": "k"}, load: worker, args: []string{"--temporal-api-key-file", keyFile}, wantErr: "not both"},
		{name: "empty api key file", load: worker, args: []string{"--temporal-api-key-file", emptyKey}, wantErr: "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearProdEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p, err := tt.load(tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

func TestRedisClientModes(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	writeFile(t, pw, "file-password\n")
	tests := []struct {
		name string
		conn redisConn
		addr string
		want string
	}{
		{"single", redisConn{}, "r:6379", "*redis.Client"},
		{"sentinel", redisConn{SentinelMaster: "mymaster"}, "s1:26379,s2:26379", "*redis.Client"},
		{"cluster", redisConn{Cluster: true}, "c1:6379,c2:6379", "*redis.ClusterClient"},
		{"cluster from one seed", redisConn{Cluster: true}, "c1:6379", "*redis.ClusterClient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.conn.client(tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := fmt.Sprintf("%T", c); got != tt.want {
				t.Errorf("client %s, want %s", got, tt.want)
			}
		})
	}
	c, err := redisConn{PasswordFile: pw}.client("r:6379")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.(*redis.Client).Options().Password; got != "file-password" {
		t.Errorf("password %q, want the file's", got)
	}
}

// The log line of the connections names the setup, never a secret.
func TestConnectionLogHasNoSecrets(t *testing.T) {
	clearProdEnv(t)
	t.Setenv("TEMPORAL_API_KEY", "temporal-secret-key")
	t.Setenv("WINDLASS_REDIS_PASSWORD", "redis-secret-password")
	c, err := loadWorkerConfig([]string{"--redis-address", "r:6379"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	c.prod.logConnections(slog.New(slog.NewTextHandler(&buf, nil)), c.common, c.RedisAddr)
	out := buf.String()
	for _, secret := range []string{"temporal-secret-key", "redis-secret-password"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line shows a secret: %s", out)
		}
	}
	for _, want := range []string{"auth=\"api-key (env)\"", "redis_password=true", "tls=true"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %s: %s", want, out)
		}
	}
}
