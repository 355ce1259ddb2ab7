package cluster

import (
	"archive/zip"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ZooKeeperJars is the class path a ZooKeeper member runs with: Debian's
// zookeeper 3.8 (whose manifest names the jars it needs) and slf4j's
// simple logger, so the member logs to its stderr (the member's log).
var ZooKeeperJars = []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"}

// zkMainClass is the server's entry point: a quorum peer, or a standalone
// server when its configuration names no other member.
const zkMainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// zkTick is the members' tickTime: the unit of ZooKeeper's timeouts (a
// session's at least 2 ticks, a follower's sync limit, the election's
// waits) and the granularity of session expiry.
const zkTick = 200 * time.Millisecond

// A zkMember is one ZooKeeper server (a JVM) of a ZooKeeper ensemble, run
// by its backend's [MemberRunner] in its own folder: its configuration
// (zoo.cfg) and its data directory (data/, on a [Disk]: myid, snapshots,
// transaction log); its log is <name>.log beside the folder. Its client,
// quorum and election ports are reserved for the cluster's life, so a
// killed member restarts on the same addresses. Clients reach it through
// its Link; the members reach each other on their own addresses.
type zkMember struct {
	memberProc
	id           int // myid: the member's number
	clientPort   int
	quorumPort   int
	electionPort int
	// servers returns the ensemble's server.N lines, its own among them;
	// set by the cluster.
	servers func() []string
	// clock is the JVM's clock under the clock shim, shim the shim's
	// path; nil and "" when it runs without it.
	clock *Clock
	shim  string
}

var (
	_ Proc        = (*zkMember)(nil)
	_ PIDProc     = (*zkMember)(nil)
	_ DurableProc = (*zkMember)(nil)
	_ ClockedProc = (*zkMember)(nil)
)

// Clock returns the member's clock, or nil when its JVM runs without the
// clock shim (a backend without ClockShim, or the docker backend's).
func (z *zkMember) Clock() *Clock { return z.clock }

// Addr returns the member's own client address (not its proxy).
func (z *zkMember) Addr() string { return loopback(z.clientPort) }

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// config returns the member's zoo.cfg. Timeouts are in ticks of zkTick:
// 10 s to join a leader (initLimit), 2 s for a follower to keep up
// (syncLimit). Sessions may last 2 ticks to 60 s, so a scenario's TTL is
// the session timeout asked for. The transaction log is preallocated 1 MB
// at a time (ZooKeeper's default, 64 MB, filled lazy disks).
func (z *zkMember) config() string {
	lines := []string{
		"tickTime=" + strconv.FormatInt(zkTick.Milliseconds(), 10),
		"initLimit=50",
		"syncLimit=10",
		"dataDir=" + z.disk.Path,
		"clientPortAddress=127.0.0.1",
		"clientPort=" + strconv.Itoa(z.clientPort),
		"minSessionTimeout=" + strconv.FormatInt(2*zkTick.Milliseconds(), 10),
		"maxSessionTimeout=60000",
		"preAllocSize=1024",
		"forceSync=yes",
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr,ruok,cons", // cons: a clock jump's read-back (ZooKeeperClock)
		"cnxTimeout=1000",
	}
	if servers := z.servers(); len(servers) > 1 { // one alone runs standalone
		lines = append(lines, servers...)
	}
	return strings.Join(lines, "\n") + "\n"
}

// javaBin returns the java launcher, or [ErrBinaryNotFound].
func javaBin() (string, error) {
	if p, err := exec.LookPath("java"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: java (apt-get install zookeeper)", ErrBinaryNotFound)
}

// ZooKeeperInstalled reports whether java and Debian's ZooKeeper jars
// ([ZooKeeperJars]) are found.
func ZooKeeperInstalled() bool {
	if _, err := javaBin(); err != nil {
		return false
	}
	return zkJarsMissing() == ""
}

// zkJarsMissing returns the first jar of [ZooKeeperJars] that is missing, or "".
func zkJarsMissing() string {
	for _, j := range ZooKeeperJars {
		if !fileExists(j) {
			return j
		}
	}
	return ""
}

// Start starts the member if it is not running (writing its myid the
// first time, or after WipeData) and waits until its client port answers
// ruok: the JVM is up (and, under the clock shim, has mapped its clock
// file). It does not wait for a quorum: a member serves clients only once
// the ensemble has a leader (see [Cluster.WaitZooKeeperServing]).
func (z *zkMember) Start(ctx context.Context) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.runningLocked() {
		return nil
	}
	if err := z.launchLocked(ctx); err != nil {
		return z.startError(err)
	}
	if err := z.waitUp(ctx); err != nil {
		_ = z.killLocked()
		return z.startError(err)
	}
	if z.clock != nil {
		if err := checkClockMapped(ctx, z.PID(), z.clock, z.name, z.shim, "java"); err != nil {
			_ = z.killLocked()
			return z.startError(err)
		}
	}
	return nil
}

// launchLocked writes the configuration (and myid, if the data directory
// has none) and starts the JVM without waiting for it.
func (z *zkMember) launchLocked(ctx context.Context) error {
	if err := os.MkdirAll(z.dir, 0o755); err != nil {
		return err
	}
	cfg := filepath.Join(z.dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(z.config()), 0o644); err != nil {
		return err
	}
	myid := filepath.Join(z.disk.Path, "myid")
	if !fileExists(myid) {
		if err := os.WriteFile(myid, []byte(strconv.Itoa(z.id)+"\n"), 0o644); err != nil {
			return err
		}
		if err := z.disk.Sync(); err != nil {
			return err
		}
	}
	return z.runLocked(ctx, zkJVMArgs(cfg))
}

// zkJVMArgs returns the JVM's arguments (after the java command) for a
// member configured by cfg: a small heap, the serial collector and the
// client compiler only, so that a member starts in about a second and
// stays under 100 MB, and the class path of [ZooKeeperJars].
func zkJVMArgs(cfg string) []string {
	return []string{"-Xms32m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.net.preferIPv4Stack=true", "-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", strings.Join(ZooKeeperJars, ":"), zkMainClass, cfg}
}

// zkEnv is lockpick's environment without the variables a JVM or
// ZooKeeper reads as settings.
func zkEnv() []string {
	return envWithout("JAVA_TOOL_OPTIONS=", "JDK_JAVA_OPTIONS=", "_JAVA_OPTIONS=", "CLASSPATH=")
}

// waitUp polls the member's client port with ruok until it answers imok,
// the JVM exits, ctx ends or the start timeout passes.
func (z *zkMember) waitUp(ctx context.Context) error {
	return pollStart(ctx, z.timeout, z.exited, "imok", func() bool {
		out, err := ZooKeeperCommand(z.Addr(), "ruok", 500*time.Millisecond)
		return err == nil && out == "imok"
	})
}

// pollStart calls ready every 25ms until it reports true (nil), the
// process exits (exited closes), ctx ends or timeout passes (an error
// wrapping [ErrNotReady] that says no answer of answer came).
func pollStart(ctx context.Context, timeout time.Duration, exited <-chan struct{}, answer string, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		select {
		case <-exited:
			return errors.New("process exited during start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no %s within %v", ErrNotReady, answer, timeout)
		}
	}
}

// ZooKeeperCommand sends a four-letter word (ruok, srvr) to the ZooKeeper
// server at addr and returns its answer, trimmed, within timeout.
func ZooKeeperCommand(addr, word string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ZooKeeperMode returns the mode the ZooKeeper server at addr reports
// (srvr's "Mode:": leader, follower, standalone), or an error when it does
// not answer within timeout or does not serve (no quorum: "This ZooKeeper
// instance is not currently serving requests").
func ZooKeeperMode(addr string, timeout time.Duration) (string, error) {
	out, err := ZooKeeperCommand(addr, "srvr", timeout)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("cluster: ZooKeeper at %s does not serve: %q", addr, firstLine(out))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// ZooKeeperLoadedZxid returns the highest zxid a ZooKeeper member loaded
// from its data directory at its last start ("0x0": none), read from its
// log at logPath, or an error if the log says nothing of it.
func ZooKeeperLoadedZxid(logPath string) (string, error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return "", err
	}
	const mark = "highest zxid is "
	i := strings.LastIndex(string(b), mark)
	if i < 0 {
		return "", fmt.Errorf("cluster: %s does not say what the member loaded (%q)", logPath, mark)
	}
	rest := string(b[i+len(mark):])
	if j := strings.IndexAny(rest, ", \n"); j >= 0 {
		rest = rest[:j]
	}
	return rest, nil
}

// ZooKeeperVersion returns the version in the pom.properties of the
// ZooKeeper jar ([ZooKeeperJars]), or "" if it cannot be read.
func ZooKeeperVersion() string {
	r, err := zip.OpenReader(ZooKeeperJars[0])
	if err != nil {
		return ""
	}
	defer r.Close()
	f, err := r.Open("META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "version="); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
