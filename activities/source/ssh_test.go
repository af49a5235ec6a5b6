package source

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/windlass-cd/windlass/internal/testbed"
)

// sshGitServer serves the bare repositories under root over SSH to one
// authorised public key, running git-upload-pack for each session.
type sshGitServer struct {
	addr    string
	hostKey ssh.PublicKey
}

func startSSHGitServer(t *testing.T, root string, authorized ssh.PublicKey) *sshGitServer {
	t.Helper()
	hostSigner := newSigner(t)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), authorized.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("public key not authorised")
		},
	}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serveSSH(conn, cfg, root) })
		}
	})
	return &sshGitServer{addr: ln.Addr().String(), hostKey: hostSigner.PublicKey()}
}

func serveSSH(conn net.Conn, cfg *ssh.ServerConfig, root string) {
	defer conn.Close()
	sconn, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return // failed authentication ends here
	}
	defer sconn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go serveSession(ch, chReqs, root)
	}
}

// serveSession answers one exec of git-upload-pack '<path>'.
func serveSession(ch ssh.Channel, reqs <-chan *ssh.Request, root string) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			if req.WantReply {
				_ = req.Reply(req.Type == "env", nil)
			}
			continue
		}
		var p struct{ Command string }
		_ = ssh.Unmarshal(req.Payload, &p)
		arg, ok := strings.CutPrefix(p.Command, "git-upload-pack ")
		if !ok {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		dir := filepath.Join(root, filepath.Clean("/"+strings.Trim(arg, "'")))
		cmd := exec.Command("git", "upload-pack", dir)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		stdin, err := cmd.StdinPipe()
		status := uint32(1)
		if err == nil && cmd.Start() == nil {
			go func() { _, _ = io.Copy(stdin, ch); _ = stdin.Close() }()
			if cmd.Wait() == nil {
				status = 0
			}
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeKey writes a new ed25519 private key (encrypted with passphrase
// when it is set) and returns its path and public key.
func writeKey(t *testing.T, dir, name, passphrase string) (string, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return path, sshPub
}

func writeKnownHosts(t *testing.T, dir, name, addr string, key ssh.PublicKey) string {
	t.Helper()
	path := filepath.Join(dir, name)
	content := ""
	if key != nil {
		content = knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSSH resolves and checks out over SSH with key auth and host key
// checking, against an in-process SSH server running git-upload-pack.
func TestSSH(t *testing.T) {
	root := t.TempDir()
	httpSrv := gitServerAt(t, root)
	_, w := fixtureRepo(t, httpSrv, "team/app.git", nil)
	want := commit(t, w, "one", map[string]string{"app/cm.yaml": "a: 1\n"})

	dir := t.TempDir()
	const passphrase = "key-Passphrase-42"
	goodKey, goodPub := writeKey(t, dir, "good", "")
	lockedKey, lockedPub := writeKey(t, dir, "locked", passphrase)
	wrongKey, _ := writeKey(t, dir, "wrong", "")
	srv := startSSHGitServer(t, root, goodPub)
	lockedSrv := startSSHGitServer(t, root, lockedPub)
	known := writeKnownHosts(t, dir, "known", srv.addr, srv.hostKey)
	lockedKnown := writeKnownHosts(t, dir, "locked_known", lockedSrv.addr, lockedSrv.hostKey)
	otherHostKey := newSigner(t).PublicKey()
	changed := writeKnownHosts(t, dir, "changed", srv.addr, otherHostKey)
	empty := writeKnownHosts(t, dir, "empty", srv.addr, nil)
	t.Setenv("WINDLASS_TEST_SSH_PASSPHRASE", passphrase)

	url := "ssh://git@" + srv.addr + "/team/app.git"
	lockedURL := "ssh://git@" + lockedSrv.addr + "/team/app.git"
	tests := []struct {
		name    string
		url     string
		cred    *RepoCredential
		errType string
	}{
		{name: "good key, known host", url: url, cred: &RepoCredential{SSHPrivateKeyFile: goodKey, SSHKnownHostsFile: known}},
		{name: "encrypted key", url: lockedURL, cred: &RepoCredential{SSHPrivateKeyFile: lockedKey, SSHKnownHostsFile: lockedKnown, PasswordEnv: "WINDLASS_TEST_SSH_PASSPHRASE"}},
		{name: "insecure ignore host key", url: url, cred: &RepoCredential{SSHPrivateKeyFile: goodKey, SSHKnownHostsFile: empty, InsecureIgnoreHostKey: true}},
		{name: "wrong key", url: url, cred: &RepoCredential{SSHPrivateKeyFile: wrongKey, SSHKnownHostsFile: known}, errType: "AuthenticationFailed"},
		{name: "host key changed", url: url, cred: &RepoCredential{SSHPrivateKeyFile: goodKey, SSHKnownHostsFile: changed}, errType: "HostKeyMismatch"},
		{name: "host unknown", url: url, cred: &RepoCredential{SSHPrivateKeyFile: goodKey, SSHKnownHostsFile: empty}, errType: "HostKeyMismatch"},
		{name: "encrypted key without passphrase", url: lockedURL, cred: &RepoCredential{SSHPrivateKeyFile: lockedKey, SSHKnownHostsFile: lockedKnown}, errType: "AuthenticationFailed"},
		{name: "no credential", url: url, errType: "AuthenticationFailed"},
		{name: "server down", url: "ssh://git@" + testbed.ClosedAddr(t) + "/team/app.git", cred: &RepoCredential{SSHPrivateKeyFile: goodKey, SSHKnownHostsFile: known}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var creds Credentials
			if tt.cred != nil {
				c := *tt.cred
				c.URLPrefix = "ssh://git@127.0.0.1:"
				creds.Repos = []RepoCredential{c}
			}
			a := newActivities(t, creds)
			out, err := a.ResolveRevision(t.Context(), ResolveInput{RepoURL: tt.url, Revision: "main"})
			if err != nil && strings.Contains(err.Error(), passphrase) {
				t.Errorf("error %q holds the passphrase", err)
			}
			switch {
			case tt.name == "server down":
				wantErrType(t, err, "") // retryable
				return
			case tt.errType != "":
				wantErrType(t, err, tt.errType)
				t.Log(err)
				return
			case err != nil:
				t.Fatal(err)
			}
			if out.SHA != want {
				t.Fatalf("SHA = %s, want %s", out.SHA, want)
			}
			tree, err := a.Checkout(t.Context(), tt.url, want)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(tree, "app", "cm.yaml"))
			if d := cmp.Diff("a: 1\n", string(b)); err != nil || d != "" {
				t.Errorf("checked out file: %v (-want +got):\n%s", err, d)
			}
		})
	}
}
