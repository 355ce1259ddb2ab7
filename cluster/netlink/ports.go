package netlink

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

// Ports are reserved, not merely found free. A reserved port lies below the
// kernel's ephemeral range, so no outgoing connection or port-0 listener on
// the host is ever given it, and it is held by an flock on a file under
// $TMPDIR/lockpick-ports, so no other lockpick run (or other backend in this
// one) picks it while the reservation lives. The kernel drops the lock when
// the holder dies, so a crashed run leaves nothing reserved. A killed node
// therefore finds its port free when it restarts, however long it stayed down.
//
// The holder removes the file before it lets go of the lock, so the folder
// does not fill up over days of trials (a crashed run leaves its files, to be
// reused). Whoever locks a file checks that it is still the one at that path,
// since a file removed after it was opened can be locked but reserves nothing.

// A PortReservation holds one reserved loopback port until Release.
type PortReservation struct {
	port int
	mu   sync.Mutex
	lock *os.File
}

// Port returns the reserved port.
func (r *PortReservation) Port() int { return r.port }

// Release gives the port back. It is idempotent.
func (r *PortReservation) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lock != nil {
		_ = os.Remove(r.lock.Name()) // while locked: see above
		_ = r.lock.Close()
		r.lock = nil
	}
}

var portRangeOnce = sync.OnceValues(func() (lo, hi int) {
	lo, hi = 10000, 32000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	eLo, err1 := strconv.Atoi(f[0])
	eHi, err2 := strconv.Atoi(f[1])
	switch {
	case err1 != nil || err2 != nil:
	case eLo-1 > lo+1000:
		hi = eLo - 1
	case eHi+1 < 64000:
		lo, hi = eHi+1, 65535
	}
	return lo, hi
})

// ReservePort reserves a free loopback port outside the ephemeral range,
// held until [PortReservation.Release]. It returns [ErrNoPort] if none is free.
func ReservePort() (*PortReservation, error) {
	dir := filepath.Join(os.TempDir(), "lockpick-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("netlink: reserve port: %w", err)
	}
	lo, hi := portRangeOnce()
	for range 200 {
		port := lo + rand.IntN(hi-lo+1)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, fmt.Errorf("netlink: reserve port: %w", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil || !samePath(f) {
			_ = f.Close()
			continue
		}
		// Someone outside lockpick may hold it; a test bind tells.
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			_ = os.Remove(f.Name())
			_ = f.Close()
			continue
		}
		_ = l.Close()
		return &PortReservation{port: port, lock: f}, nil
	}
	return nil, fmt.Errorf("%w in %d-%d", ErrNoPort, lo, hi)
}

// samePath reports whether f is still the file at its path: not removed,
// nor replaced, since it was opened.
func samePath(f *os.File) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(f.Name())
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
