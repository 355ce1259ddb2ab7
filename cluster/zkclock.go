package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// zkClockSession is the session timeout ZooKeeperClock asks for: the
// session is closed at once, and one left open by an error expires soon.
const zkClockSession = 4 * time.Second

// zkEst finds a connection's est= (when the member accepted it, in Unix
// milliseconds) in a line of cons.
var zkEst = regexp.MustCompile(`[(,]est=(\d+)[,)]`)

// ZooKeeperClock reads the wall clock of the ZooKeeper member n on its
// own address, within timeout. ZooKeeper tells no time of its own, but
// cons lists each connection with a session and, as est, the time the
// member accepted it (a java.util.Date: System.currentTimeMillis, the
// JVM's wall clock). So it opens a session (ZooKeeper's ConnectRequest, by
// hand), finds it by its session id in cons, and closes it. It returns
// that est and the host's wall clock just before its dial (from) and once
// the member answered the session request (to), between which the member
// took it. An error says which step failed; a member without a quorum
// grants no session.
func ZooKeeperClock(n *Node, timeout time.Duration) (est, from, to time.Time, err error) {
	z, ok := n.Proc.(*zkMember)
	if !ok {
		return est, from, to, fmt.Errorf("cluster: %s is not a ZooKeeper member", n.Name)
	}
	deadline := time.Now().Add(timeout)
	from = time.Now()
	conn, err := net.DialTimeout("tcp", z.Addr(), timeout)
	if err != nil {
		return est, from, to, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	sid, err := zkNewSession(conn)
	if err != nil {
		return est, from, to, fmt.Errorf("cluster: ZooKeeper session on %s: %w", n.Name, err)
	}
	to = time.Now()
	defer zkCloseSession(conn)
	out, err := ZooKeeperCommand(z.Addr(), "cons", time.Until(deadline))
	if err != nil {
		return est, from, to, fmt.Errorf("cluster: cons on %s: %w", n.Name, err)
	}
	mark := fmt.Sprintf(",sid=0x%x,", sid)
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, mark) {
			continue
		}
		m := zkEst.FindStringSubmatch(line)
		if m == nil {
			return est, from, to, fmt.Errorf("cluster: cons on %s: no est in %q", n.Name, line)
		}
		ms, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return est, from, to, fmt.Errorf("cluster: cons on %s: %w", n.Name, err)
		}
		return time.UnixMilli(ms), from, to, nil
	}
	return est, from, to, fmt.Errorf("cluster: cons on %s does not list session 0x%x: %q", n.Name, sid, firstLine(out))
}

// zkNewSession sends a ConnectRequest for a new session on conn (jute,
// big-endian, length-prefixed: protocol version, last zxid seen, timeout
// in ms, session id 0, a password of 16 zero bytes, read-only false) and
// returns the session id of the member's answer.
func zkNewSession(conn net.Conn) (uint64, error) {
	req := binary.BigEndian.AppendUint32(nil, 45)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(zkClockSession.Milliseconds()))
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 16)
	req = append(req, make([]byte, 16)...)
	req = append(req, 0)
	if _, err := conn.Write(req); err != nil {
		return 0, err
	}
	// The answer: its length, then protocol version, timeout, session id,
	// password. A member that grants no session closes the connection.
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 16 || n > 1024 {
		return 0, fmt.Errorf("answer of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return 0, err
	}
	sid := binary.BigEndian.Uint64(body[8:16])
	if sid == 0 {
		return 0, errors.New("no session granted")
	}
	return sid, nil
}

// zkCloseSession closes conn's session (a request header: xid 1,
// closeSession, -11) and waits for the answer until conn's deadline, so
// the session does not outlive the read.
func zkCloseSession(conn net.Conn) {
	req := binary.BigEndian.AppendUint32(nil, 8)
	req = binary.BigEndian.AppendUint32(req, 1)
	req = binary.BigEndian.AppendUint32(req, uint32(0xFFFFFFF5)) // -11
	if _, err := conn.Write(req); err != nil {
		return
	}
	var size [4]byte
	_, _ = io.ReadFull(conn, size[:])
}
