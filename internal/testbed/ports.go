package testbed

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports are picked at random below the kernel's ephemeral range, so that
// outgoing connections (which take ephemeral ports) cannot grab a port
// between the check here and the server's own bind. A port is handed out at
// most once per process. Another process may still race for the same port;
// callers retry when a server reports "address already in use".
const lowestPort = 20000

var (
	portsMu  sync.Mutex
	usedPort = map[int]bool{}
)

func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// freePorts returns n distinct loopback TCP ports that are free right now.
func freePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	high := ephemeralLow()
	out := make([]int, 0, n)
	for attempts := 0; len(out) < n; attempts++ {
		if attempts > 1000 {
			return nil, fmt.Errorf("no free loopback port found after %d attempts", attempts)
		}
		var port int
		if high-lowestPort >= 1000 {
			port = lowestPort + rand.IntN(high-lowestPort)
		} else {
			p, err := kernelPort()
			if err != nil {
				return nil, err
			}
			port = p
		}
		if usedPort[port] || !portFree(port) {
			continue
		}
		usedPort[port] = true
		out = append(out, port)
	}
	return out, nil
}

func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

func kernelPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// isAddrInUse reports whether a server's log says that its port was taken.
func isAddrInUse(logText string) bool {
	return strings.Contains(strings.ToLower(logText), "address already in use")
}

// Fataler is the part of testing.TB that ClosedAddr uses.
type Fataler interface {
	Helper()
	Fatal(args ...any)
}

// ClosedAddr returns a 127.0.0.1 address that nothing listens on, for tests
// of unreachable servers. The port is below the ephemeral range and handed
// out once per process, so no other server of the tests binds it.
func ClosedAddr(t Fataler) string {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(host, strconv.Itoa(ports[0]))
}
