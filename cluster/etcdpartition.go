package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// An etcdPeerFilter is the address an etcd member announces to its peers:
// it forwards every connection to the member's Peer link, unless a
// partition separates the member that dialled it from the owner. A Peer
// link alone cannot make that partition: etcd members reach each other
// both over streams the receiver dials and over HTTP posts the sender
// dials, so cutting one member's inbound connections still lets its
// messages out (docs/etcd.md). The filter tells the dialling member by the
// connection's source port, which /proc/net/tcp maps to a socket inode
// that one member process holds (the process backend runs them all on this
// host). HTTP headers would not do: a follower forwards lease keep-alives
// to the leader without naming itself. A connection across the cut is
// black-holed (held open, nothing forwarded either way), as a real
// partition would; when the cut heals it is closed, so the peers reconnect.
type etcdPeerFilter struct {
	owner    *Node
	c        *Cluster
	upstream string
	ln       net.Listener

	mu    sync.Mutex
	conns map[*peerConn]struct{}
}

// peerConn is one connection through an etcdPeerFilter.
type peerConn struct {
	sender string // the dialling member's name, "" if not a member
	down   net.Conn
	up     net.Conn // nil while black-holed
}

func newEtcdPeerFilter(c *Cluster, owner *Node, upstream string) (*etcdPeerFilter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cluster: peer filter of %s: %w", owner.Name, err)
	}
	f := &etcdPeerFilter{owner: owner, c: c, upstream: upstream, ln: ln, conns: map[*peerConn]struct{}{}}
	go f.serve()
	return f, nil
}

func (f *etcdPeerFilter) addr() string { return f.ln.Addr().String() }

func (f *etcdPeerFilter) serve() {
	for {
		down, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.handle(down)
	}
}

func (f *etcdPeerFilter) handle(down net.Conn) {
	pc := &peerConn{sender: f.c.etcdDialer(down), down: down}
	f.mu.Lock()
	f.conns[pc] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, pc)
		f.mu.Unlock()
		_ = down.Close()
	}()
	if f.c.etcdCut(pc.sender, f.owner.Name) {
		_, _ = io.Copy(io.Discard, down) // until the peer or a heal closes it
		return
	}
	up, err := net.Dial("tcp", f.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	f.mu.Lock()
	pc.up = up
	f.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
}

// closeCrossing closes the connections whose sender and owner the sides
// now separate (held ones stay held), or, when cut is false, every held
// connection, so the peers reconnect through the healed filter.
func (f *etcdPeerFilter) closeCrossing(cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for pc := range f.conns {
		crossing := f.c.etcdCut(pc.sender, f.owner.Name)
		if (cut && crossing && pc.up != nil) || (!cut && pc.up == nil) {
			_ = pc.down.Close()
			if pc.up != nil {
				_ = pc.up.Close()
			}
		}
	}
}

func (f *etcdPeerFilter) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for pc := range f.conns {
		_ = pc.down.Close()
		if pc.up != nil {
			_ = pc.up.Close()
		}
	}
}

// PartitionEtcd splits the etcd members in two: those named in side on one
// side, every other on the other. Peer connections across the cut are
// black-holed both ways, existing ones closed first; clients still reach
// every member through its Link. It returns [ErrNoSuchNode] for a name
// that is not a member, and [ErrBadTopology] outside an etcd topology.
func (c *Cluster) PartitionEtcd(side ...string) error {
	if len(c.Etcd) == 0 {
		return fmt.Errorf("%w: no etcd members to partition", ErrBadTopology)
	}
	sides := map[string]int{}
	for _, n := range c.Etcd {
		sides[n.Name] = 2
	}
	for _, name := range side {
		if _, ok := sides[name]; !ok {
			return fmt.Errorf("%w: %q is no etcd member", ErrNoSuchNode, name)
		}
		sides[name] = 1
	}
	c.mu.Lock()
	c.etcdSides = sides
	c.mu.Unlock()
	for _, f := range c.peerFilters {
		f.closeCrossing(true)
	}
	return nil
}

// HealEtcdPartition ends the partition [Cluster.PartitionEtcd] made, and
// closes the black-holed connections so the members reconnect. It is
// idempotent.
func (c *Cluster) HealEtcdPartition() error {
	c.mu.Lock()
	c.etcdSides = nil
	c.mu.Unlock()
	for _, f := range c.peerFilters {
		f.closeCrossing(false)
	}
	return nil
}

// etcdCut reports whether a partition separates members a and b; a
// connection of an unknown dialler ("") is never cut.
func (c *Cluster) etcdCut(a, b string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcdSides == nil || a == "" {
		return false
	}
	return c.etcdSides[a] != c.etcdSides[b]
}

// etcdDialer returns the name of the member whose process holds the
// dialling end of conn, or "" if none does.
func (c *Cluster) etcdDialer(conn net.Conn) string {
	local, ok1 := conn.LocalAddr().(*net.TCPAddr)
	remote, ok2 := conn.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return ""
	}
	inode := socketInode(remote.Port, local.Port)
	if inode == "" {
		return ""
	}
	target := "socket:[" + inode + "]"
	c.mu.Lock()
	members := c.Etcd
	c.mu.Unlock()
	for _, n := range members {
		pid := n.Proc.(PIDProc).PID()
		if pid != 0 && holdsSocket(pid, target) {
			return n.Name
		}
	}
	return ""
}

// socketInode returns the inode of the IPv4 loopback TCP socket whose
// local port is from and remote port is to, from /proc/net/tcp, or "".
func socketInode(from, to int) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	want := fmt.Sprintf("0100007F:%04X", from)
	peer := fmt.Sprintf("0100007F:%04X", to)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == want && fs[2] == peer {
			return fs[9]
		}
	}
	return ""
}

// holdsSocket reports whether process pid has an open descriptor on
// target ("socket:[inode]").
func holdsSocket(pid int, target string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == target {
			return true
		}
	}
	return false
}
