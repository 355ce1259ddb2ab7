package cluster

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
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
// JVM's wall clock). So it opens a session with go-zookeeper's client, on
// this member alone, finds it by its session id in cons, and closes it. It
// returns that est and the host's wall clock just before the client dialled
// (from) and once the member granted the session (to), between which the
// member took the connection. An error says which step failed; a member without a quorum
// grants no session.
func ZooKeeperClock(n *Node, timeout time.Duration) (est, from, to time.Time, err error) {
	z, ok := n.Proc.(*zkMember)
	if !ok {
		return est, from, to, fmt.Errorf("cluster: %s is not a ZooKeeper member", n.Name)
	}
	deadline := time.Now().Add(timeout)
	from = time.Now()
	has := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect([]string{z.Addr()}, zkClockSession, zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false),
		zk.WithEventCallback(func(e zk.Event) {
			if e.Type == zk.EventSession && e.State == zk.StateHasSession {
				once.Do(func() { close(has) })
			}
		}))
	if err != nil {
		return est, from, to, fmt.Errorf("cluster: ZooKeeper session on %s: %w", n.Name, err)
	}
	defer conn.Close() // closes the session, so it does not outlive the read
	select {
	case <-has:
	case <-time.After(time.Until(deadline)):
		return est, from, to, fmt.Errorf("cluster: ZooKeeper session on %s: none granted within %v", n.Name, timeout)
	}
	to = time.Now()
	sid := conn.SessionID()
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

// zkQuiet silences go-zookeeper's logger.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}
