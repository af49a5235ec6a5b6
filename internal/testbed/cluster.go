package testbed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Component binaries, in start order, and the kwok stage file, all in BinDir.
const (
	etcdName      = "etcd"
	apiserverName = "kube-apiserver"
	kcmName       = "kube-controller-manager"
	schedName     = "kube-scheduler"
	kwokName      = "kwok"
	kwokStages    = "kwok-stages.yaml"

	adminKubeconfig = "admin.kubeconfig"
	kubeContext     = "windlass-testbed"
	host            = "127.0.0.1"
	startAttempts   = 3
)

var componentNames = []string{etcdName, apiserverName, kcmName, schedName, kwokName}

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok and kwok-stages.yaml. Default:
	// $WINDLASS_TESTBED_BIN, else <repo root>/bin/testbed, where the repo
	// root is the first directory above the working directory with a go.mod.
	BinDir string
	// Dir is the state directory: pki/, etcd/, logs/, pids and the
	// kubeconfigs. Previous state in it is wiped. Default: a new temporary
	// directory.
	Dir string
	// Nodes is the number of kwok fake nodes. Default 2.
	Nodes int
	// Log, when set, receives progress messages with slog-style key-value
	// pairs.
	Log func(msg string, args ...any)
}

// Cluster is a running control plane. Config may be shared; copy it with
// rest.CopyConfig before changing it.
type Cluster struct {
	Dir        string       // state directory
	Kubeconfig string       // <Dir>/admin.kubeconfig, a system:masters client
	Config     *rest.Config // from Kubeconfig, with QPS 1000 and burst 2000
}

// Stop stops the cluster's processes; see StopDir. Data and logs stay in Dir.
func (c *Cluster) Stop() error { return StopDir(c.Dir) }

// LoadCluster returns the cluster running in dir, as started by StartCluster
// (for example through hack/cluster up). It fails when a recorded process is
// not running. Stop on the result stops that cluster.
func LoadCluster(dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve cluster dir: %w", err)
	}
	alive, total, err := dirState(dir)
	if err != nil {
		return nil, err
	}
	if total == 0 || alive != total {
		return nil, fmt.Errorf("cluster in %s is not running (%d of %d recorded processes alive); start it with hack/cluster up", dir, alive, total)
	}
	kc := filepath.Join(dir, adminKubeconfig)
	cfg, err := restConfig(kc)
	if err != nil {
		return nil, err
	}
	return &Cluster{Dir: dir, Kubeconfig: kc, Config: cfg}, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS = 1000
	cfg.Burst = 2000
	return cfg, nil
}

// errPortInUse marks a start that failed because another process took one
// of the picked ports; StartCluster then retries with new ports.
var errPortInUse = errors.New("port taken by another process")

// StartCluster starts etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok on free loopback ports, creates opts.Nodes fake
// nodes and returns once the nodes are Ready and the default ServiceAccount
// exists. The processes run detached and outlive the caller; stop them with
// Cluster.Stop or StopDir. On failure every started process is stopped and
// the error holds the tail of the failing component's log.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	begin := time.Now()
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 2
	}
	if opts.BinDir == "" {
		d, err := defaultBinDir()
		if err != nil {
			return nil, err
		}
		opts.BinDir = d
	}
	if err := checkBinaries(opts.BinDir); err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "windlass-cluster-")
		if err != nil {
			return nil, fmt.Errorf("create cluster dir: %w", err)
		}
		opts.Dir = d
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolve cluster dir: %w", err)
	}
	opts.Dir = dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cluster dir: %w", err)
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}

	for attempt := 1; ; attempt++ {
		c, err := startOnce(ctx, opts, begin)
		if err == nil {
			opts.Log("cluster ready", "dir", dir, "nodes", opts.Nodes, "elapsed", since(begin))
			return c, nil
		}
		if errors.Is(err, errPortInUse) && attempt < startAttempts && ctx.Err() == nil {
			opts.Log("port conflict, retrying with new ports", "attempt", attempt, "err", err)
			continue
		}
		return nil, err
	}
}

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }

func checkBinaries(binDir string) error {
	var missing []string
	for _, f := range append(componentNames[:len(componentNames):len(componentNames)], kwokStages) {
		st, err := os.Stat(filepath.Join(binDir, f))
		if err != nil || st.IsDir() || (f != kwokStages && st.Mode()&0o111 == 0) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("test-bed binaries %v missing in %s: run `make testbed` (hack/testbed/build.sh) to build them, or set %s",
			missing, binDir, EnvBinDir)
	}
	return nil
}

type ports struct {
	etcd, etcdPeer, api, kcm, sched, kwok int
}

// boot is one attempt at starting the control plane.
type boot struct {
	opts  ClusterOptions
	begin time.Time
	pki   string
	ports ports
	procs []*process
}

func (b *boot) path(elem ...string) string {
	return filepath.Join(append([]string{b.opts.Dir}, elem...)...)
}

func (b *boot) pkiFile(name string) string { return filepath.Join(b.pki, name) }

func startOnce(ctx context.Context, opts ClusterOptions, begin time.Time) (c *Cluster, err error) {
	b := &boot{opts: opts, begin: begin}
	b.pki = b.path("pki")
	// Remove the state of an earlier run or attempt; keep anything else in Dir.
	for _, p := range []string{"pki", "etcd", logsDir, pidsFile, adminKubeconfig, "kcm.kubeconfig", "scheduler.kubeconfig", "kwok.kubeconfig"} {
		if err := os.RemoveAll(b.path(p)); err != nil {
			return nil, fmt.Errorf("clean cluster dir: %w", err)
		}
	}
	if err := writePKI(b.pki); err != nil {
		return nil, err
	}
	pp, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	b.ports = ports{etcd: pp[0], etcdPeer: pp[1], api: pp[2], kcm: pp[3], sched: pp[4], kwok: pp[5]}
	for _, u := range []string{"admin", "kcm", "scheduler", "kwok"} {
		if err := b.writeKubeconfig(u); err != nil {
			return nil, err
		}
	}
	opts.Log("pki and kubeconfigs written", "dir", opts.Dir, "apiserver", fmt.Sprintf("https://%s:%d", host, b.ports.api), "elapsed", since(begin))

	defer func() {
		if err == nil {
			return
		}
		if serr := StopDir(opts.Dir); serr != nil {
			err = errors.Join(err, serr)
		}
		for _, p := range b.procs {
			if isAddrInUse(logTail(p.logPath, 50)) {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
				break
			}
		}
	}()
	return b.run(ctx)
}

func (b *boot) run(ctx context.Context) (*Cluster, error) {
	etcd, err := b.start(etcdName, b.etcdArgs())
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://%s:%d/health", host, b.ports.etcd)
	if err := b.waitFor(ctx, "etcd healthy", 30*time.Second, etcd, func(ctx context.Context) error {
		return httpOK(ctx, http.DefaultClient, etcdURL)
	}); err != nil {
		return nil, err
	}

	api, err := b.start(apiserverName, b.apiserverArgs())
	if err != nil {
		return nil, err
	}
	kc := b.path(adminKubeconfig)
	cfg, err := restConfig(kc)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	if err := b.waitFor(ctx, "kube-apiserver ready", 120*time.Second, api, func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return nil, err
	}

	if err := installKwokCRDs(ctx, cfg); err != nil {
		return nil, err
	}
	b.opts.Log("kwok log kinds installed", "elapsed", since(b.begin))

	kcm, err := b.start(kcmName, b.kcmArgs())
	if err != nil {
		return nil, err
	}
	sched, err := b.start(schedName, b.schedulerArgs())
	if err != nil {
		return nil, err
	}
	kwok, err := b.start(kwokName, b.kwokArgs())
	if err != nil {
		return nil, err
	}
	for i := range b.opts.Nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create node %d: %w", i, err)
		}
	}
	b.opts.Log("kwok node objects created", "nodes", b.opts.Nodes, "elapsed", since(b.begin))

	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed health endpoints on loopback
	defer insecure.CloseIdleConnections()
	kcmURL := fmt.Sprintf("https://%s:%d/healthz", host, b.ports.kcm)
	if err := b.waitFor(ctx, "kube-controller-manager healthy", 60*time.Second, kcm, func(ctx context.Context) error {
		return httpOK(ctx, insecure, kcmURL)
	}); err != nil {
		return nil, err
	}
	schedURL := fmt.Sprintf("https://%s:%d/healthz", host, b.ports.sched)
	if err := b.waitFor(ctx, "kube-scheduler healthy", 60*time.Second, sched, func(ctx context.Context) error {
		return httpOK(ctx, insecure, schedURL)
	}); err != nil {
		return nil, err
	}
	if err := b.waitFor(ctx, "all nodes Ready", 60*time.Second, kwok, func(ctx context.Context) error {
		return nodesReady(ctx, cs, b.opts.Nodes)
	}); err != nil {
		return nil, err
	}
	if err := b.waitFor(ctx, "default ServiceAccount exists", 60*time.Second, kcm, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	return &Cluster{Dir: b.opts.Dir, Kubeconfig: kc, Config: cfg}, nil
}

func (b *boot) start(name string, args []string) (*process, error) {
	p, err := startProcess(b.opts.Dir, name, filepath.Join(b.opts.BinDir, name), args)
	if err != nil {
		return nil, err
	}
	b.procs = append(b.procs, p)
	b.opts.Log("started", "component", name, "pid", p.pid, "log", p.logPath)
	return p, nil
}

// waitFor polls check until it succeeds, the timeout passes, ctx ends or a
// started process exits. Errors carry the tail of the relevant log.
func (b *boot) waitFor(ctx context.Context, what string, timeout time.Duration, owner *process, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		for _, p := range b.procs {
			if done, werr := p.exited(); done {
				return withLogTail(fmt.Errorf("%s exited while waiting for %s: %w", p.name, what, werr), p)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		cancel()
		if last == nil {
			b.opts.Log(what, "elapsed", since(b.begin))
			return nil
		}
		if time.Now().After(deadline) {
			return withLogTail(fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, last), owner)
		}
		select {
		case <-ctx.Done():
			return withLogTail(fmt.Errorf("waiting for %s: %w (last check: %v)", what, ctx.Err(), last), owner)
		case <-tick.C:
		}
	}
}

func httpOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func nodesReady(ctx context.Context, cs kubernetes.Interface, want int) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		return err
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if ready < want {
		return fmt.Errorf("%d of %d nodes Ready", ready, want)
	}
	return nil
}

// fakeNode is a node that kwok manages (annotation kwok.x-k8s.io/node=fake).
func fakeNode(i int) *corev1.Node {
	name := "kwok-node-" + strconv.Itoa(i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"kubernetes.io/arch":            "amd64",
				"kubernetes.io/os":              "linux",
				"kubernetes.io/hostname":        name,
				"kubernetes.io/role":            "agent",
				"node-role.kubernetes.io/agent": "",
				"type":                          "kwok",
			},
		},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res.DeepCopy()},
	}
}

func (b *boot) writeKubeconfig(user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeContext] = &clientcmdapi.Cluster{
		Server:               fmt.Sprintf("https://%s:%d", host, b.ports.api),
		CertificateAuthority: b.pkiFile("ca.crt"),
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificate: b.pkiFile(user + ".crt"),
		ClientKey:         b.pkiFile(user + ".key"),
	}
	cfg.Contexts[kubeContext] = &clientcmdapi.Context{Cluster: kubeContext, AuthInfo: user}
	cfg.CurrentContext = kubeContext
	if err := clientcmd.WriteToFile(*cfg, b.path(user+".kubeconfig")); err != nil {
		return fmt.Errorf("write %s kubeconfig: %w", user, err)
	}
	return nil
}

func (b *boot) etcdArgs() []string {
	client := fmt.Sprintf("http://%s:%d", host, b.ports.etcd)
	peer := fmt.Sprintf("http://%s:%d", host, b.ports.etcdPeer)
	return []string{
		"--name=windlass",
		"--data-dir=" + b.path("etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=windlass=" + peer, "--initial-cluster-state=new",
		// Test data need not survive a crash; skipping fsync makes writes
		// much cheaper on a busy disk.
		"--unsafe-no-fsync",
		"--logger=zap", "--log-level=warn",
	}
}

func (b *boot) apiserverArgs() []string {
	return []string{
		"--bind-address=" + host, "--advertise-address=" + host,
		"--secure-port=" + strconv.Itoa(b.ports.api),
		fmt.Sprintf("--etcd-servers=http://%s:%d", host, b.ports.etcd),
		"--tls-cert-file=" + b.pkiFile("apiserver.crt"), "--tls-private-key-file=" + b.pkiFile("apiserver.key"),
		"--client-ca-file=" + b.pkiFile("ca.crt"),
		"--requestheader-client-ca-file=" + b.pkiFile("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + b.pkiFile("front-proxy-client.crt"),
		"--proxy-client-key-file=" + b.pkiFile("front-proxy-client.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + b.pkiFile("sa.pub"),
		"--service-account-signing-key-file=" + b.pkiFile("sa.key"),
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		"--profiling=false",
		"--endpoint-reconciler-type=none",
		"--v=1",
	}
}

func (b *boot) kcmArgs() []string {
	kc := b.path("kcm.kubeconfig")
	return []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=" + host, "--secure-port=" + strconv.Itoa(b.ports.kcm),
		"--leader-elect=false",
		"--kube-api-qps=1000", "--kube-api-burst=2000",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + b.pkiFile("sa.key"),
		"--root-ca-file=" + b.pkiFile("ca.crt"),
		"--cluster-signing-cert-file=" + b.pkiFile("ca.crt"), "--cluster-signing-key-file=" + b.pkiFile("ca.key"),
		"--controllers=*",
		"--profiling=false",
		"--v=1",
	}
}

func (b *boot) schedulerArgs() []string {
	kc := b.path("scheduler.kubeconfig")
	return []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=" + host, "--secure-port=" + strconv.Itoa(b.ports.sched),
		"--leader-elect=false",
		"--kube-api-qps=1000", "--kube-api-burst=2000",
		"--profiling=false",
		"--v=1",
	}
}

func (b *boot) kwokArgs() []string {
	addr := fmt.Sprintf("%s:%d", host, b.ports.kwok)
	return []string{
		"--kubeconfig=" + b.path("kwok.kubeconfig"),
		"--config=" + filepath.Join(b.opts.BinDir, kwokStages),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=" + host, "--node-port=" + strconv.Itoa(b.ports.kwok), "--server-address=" + addr,
		"--tls-cert-file=" + b.pkiFile("kwok.crt"), "--tls-private-key-file=" + b.pkiFile("kwok.key"),
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.0/16",
		kwokCRDFlag(),
	}
}
