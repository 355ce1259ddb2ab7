package cluster

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

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
		f.CloseCrossing(true)
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
		f.CloseCrossing(false)
	}
	return nil
}

// OpenAcrossEtcd returns a peer connection across the current partition
// that still forwards, as "e1->e2", or "".
func (c *Cluster) OpenAcrossEtcd() string {
	c.mu.Lock()
	filters := c.peerFilters
	c.mu.Unlock()
	return firstOpenAcross(filters)
}

// EtcdCut reports whether a partition made by [Cluster.PartitionEtcd]
// separates members a and b now; a connection of an unknown dialler ("")
// is never cut.
func (c *Cluster) EtcdCut(a, b string) bool {
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
