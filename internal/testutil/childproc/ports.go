package childproc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// portLocks are the lock files that reserve, for the life of this process,
// every port FreeAddrs has handed out.
var portLocks struct {
	sync.Mutex
	held map[int]*os.File
}

// FreeAddrs returns n distinct loopback addresses for a child process to
// listen on. A port picked by listening on ":0" and closing again can be
// taken, before the child binds it, by any outgoing connection or ":0"
// listener on the machine; so each port lies below the kernel's ephemeral
// range, where neither is placed, is reserved for the life of this process
// by a lock file that every test process respects, and was free to bind a
// moment ago.
func FreeAddrs(n int) ([]string, error) {
	low, high := reservablePorts()
	return freeAddrsIn(n, low, high, low+rand.IntN(high-low))
}

// freeAddrsIn is FreeAddrs picking from the ports in [low, high), trying
// them in turn from start.
func freeAddrsIn(n, low, high, start int) ([]string, error) {
	portLocks.Lock()
	defer portLocks.Unlock()
	if portLocks.held == nil {
		portLocks.held = map[int]*os.File{}
	}
	var addrs []string
	for i := 0; i < high-low && len(addrs) < n; i++ {
		port := low + (start-low+i)%(high-low)
		if _, mine := portLocks.held[port]; mine {
			continue
		}
		lock, ok := reservePort(port)
		if !ok {
			continue
		}
		portLocks.held[port] = lock
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	if len(addrs) < n {
		return nil, fmt.Errorf("finding %d free ports in %d-%d: found %d", n, low, high-1, len(addrs))
	}
	return addrs, nil
}

// reservePort takes port's lock file and checks that the port can be bound
// now; it returns the open lock file, or false when another test process
// holds the port or something else listens on it.
func reservePort(port int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "windlass-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		f.Close()
		return nil, false
	}
	ln.Close()
	return f, true
}

// reservablePorts returns the half-open range of ports FreeAddrs picks
// from: the ten thousand below the kernel's ephemeral range.
func reservablePorts() (low, high int) {
	high = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 11024 {
				high = v
			}
		}
	}
	return high - 10000, high
}
