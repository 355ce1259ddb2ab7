package cluster_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testetcd"
)

// TestEtcd_StartKillLeader starts three members, finds the leader, kills it
// and checks that the other two elect a new one and still take writes, and
// that the killed member comes back with its data.
func TestEtcd_StartKillLeader(t *testing.T) {
	c := testetcd.Start(t, 3) // logs the start time (a few seconds; no bound: CI machines are busy)
	ctx := context.Background()
	old, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	etcdPut(t, old.Link.Addr(), "before", "1")
	if err := old.Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	var leader *cluster.Node
	if err := testcluster.EventuallyWithin(5*time.Second, func() error {
		leader, err = c.EtcdLeader(ctx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if leader == old {
		t.Fatalf("leader is still %s after it was killed", old.Name)
	}
	t.Logf("leader %s killed, %s elected", old.Name, leader.Name)
	etcdPut(t, leader.Link.Addr(), "after", "2")
	if err := old.Proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitEtcdHealthy(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := etcdGet(t, old.Proc.Addr(), "after"), "2"; got != want {
		t.Errorf("restarted %s reads after=%q, want %q", old.Name, got, want)
	}
}

// TestEtcd_RestartWiped wipes a follower's data between kill and start:
// the member is replaced (removed and added again) and catches up.
func TestEtcd_RestartWiped(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx := context.Background()
	fs, err := c.EtcdFollowers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := fs[0]
	etcdPut(t, c.EtcdEndpoints()[0], "k", "v")
	if err := f.Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := f.Proc.WipeData(); err != nil {
		t.Fatal(err)
	}
	if err := f.Proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitEtcdHealthy(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.EventuallyWithin(3*time.Second, func() error {
		if got := etcdGet(t, f.Proc.Addr(), "k"); got != "v" {
			return fmt.Errorf("replaced %s reads k=%q", f.Name, got)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// TestEtcd_ClientLinkCut checks that a member's clients go through its
// proxy: a cut link refuses them while the member itself still answers.
func TestEtcd_ClientLinkCut(t *testing.T) {
	c := testetcd.Start(t, 3)
	n := c.Etcd[0]
	etcdPut(t, n.Link.Addr(), "k", "v")
	if err := n.Link.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := tryPut(n.Link.Addr(), "k", "w"); err == nil {
		t.Fatalf("put through the cut link of %s succeeded", n.Name)
	}
	etcdPut(t, n.Proc.Addr(), "k", "w")
	if err := n.Link.Restore(); err != nil {
		t.Fatal(err)
	}
	if got, want := etcdGet(t, n.Link.Addr(), "k"), "w"; got != want {
		t.Errorf("k = %q through the restored link, want %q", got, want)
	}
}

// TestEtcd_GenericFaults applies the generic faults to members: the
// leader paused (SIGSTOP) is replaced by an election and catches up once
// resumed; a follower killed by KillFault comes back with Heal.
func TestEtcd_GenericFaults(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx := context.Background()
	old, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pause := &faults.PauseFault{}
	if err := pause.Inject(ctx, old); err != nil {
		t.Fatal(err)
	}
	if got, err := pause.Verify(ctx, old); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s: %s", old.Name, got)
	}
	if err := testcluster.EventuallyWithin(5*time.Second, func() error {
		l, err := c.EtcdLeader(ctx)
		if err == nil && l == old {
			return fmt.Errorf("leader still %s", old.Name)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	etcdPut(t, c.EtcdEndpoints()[(indexOfNode(c, old)+1)%3], "during-pause", "1")
	if err := pause.Heal(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitEtcdHealthy(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	fs, err := c.EtcdFollowers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kill := &faults.KillFault{}
	if err := kill.Inject(ctx, fs[0]); err != nil {
		t.Fatal(err)
	}
	etcdPut(t, c.EtcdEndpoints()[indexOfNode(c, fs[1])], "during-kill", "1")
	if err := kill.Heal(ctx, fs[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitEtcdHealthy(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.EventuallyWithin(3*time.Second, func() error {
		if got := etcdGet(t, fs[0].Proc.Addr(), "during-kill"); got != "1" {
			return fmt.Errorf("healed %s reads during-kill=%q", fs[0].Name, got)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// TestEtcd_PartitionLeader cuts the leader off from the other members:
// they elect a new leader and take writes, the old leader takes none; once
// healed, all three are healthy and the old leader has the writes.
func TestEtcd_PartitionLeader(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx := context.Background()
	old, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	if err := c.PartitionEtcd(old.Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.HealEtcdPartition() })
	var leader *cluster.Node
	if err := testcluster.EventuallyWithin(6*time.Second, func() error {
		leader, err = c.EtcdLeader(ctx)
		if err == nil && leader == old {
			return fmt.Errorf("leader still %s", old.Name)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s cut off at 0, %s leader at %v", old.Name, leader.Name, time.Since(cut).Round(time.Millisecond))
	etcdPut(t, leader.Link.Addr(), "majority", "1")
	if err := tryPut(old.Proc.Addr(), "minority", "1"); err == nil {
		t.Errorf("the cut-off member %s took a write", old.Name)
	}
	if err := c.HealEtcdPartition(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitEtcdHealthy(ctx, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.EventuallyWithin(3*time.Second, func() error {
		if got := etcdGet(t, old.Proc.Addr(), "majority"); got != "1" {
			return fmt.Errorf("healed %s reads majority=%q", old.Name, got)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

func indexOfNode(c *cluster.Cluster, n *cluster.Node) int {
	for i, m := range c.Etcd {
		if m == n {
			return i
		}
	}
	return -1
}

// TestEtcd_FiveMembers starts five members and names the leader, and
// finds a member by the id in its replies.
func TestEtcd_FiveMembers(t *testing.T) {
	c := testetcd.Start(t, 5) // logs the start time; a busy machine may take longer
	ctx := context.Background()
	l, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := c.EtcdFollowers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(fs), 4; got != want {
		t.Fatalf("%d followers of %s, want %d", got, l.Name, want)
	}
	var st struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
	}
	resp, err := http.Post("http://"+fs[2].Link.Addr()+"/v3/maintenance/status", "application/json", bytes.NewReader([]byte("{}")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	id, err := strconv.ParseUint(st.Header.MemberID, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.EtcdNodeByID(ctx, id); got != fs[2] {
		t.Errorf("EtcdNodeByID(%d) = %v, want %s", id, got, fs[2].Name)
	}
}

// TestEtcd_BadTopology checks that Redis nodes and etcd members do not mix.
func TestEtcd_BadTopology(t *testing.T) {
	testetcd.Require(t)
	b, err := cluster.NewProcessBackend(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = cluster.Start(context.Background(), b, cluster.Topology{Etcd: 3, Masters: 1})
	if err == nil {
		t.Fatal("etcd members with a Redis master started")
	}
}

func tryPut(addr, key, value string) error {
	body, _ := json.Marshal(map[string]string{"key": b64(key), "value": b64(value)})
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Post("http://"+addr+"/v3/kv/put", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("put: %s", resp.Status)
	}
	return nil
}

func etcdPut(tb testing.TB, addr, key, value string) {
	tb.Helper()
	if err := tryPut(addr, key, value); err != nil {
		tb.Fatalf("put %s on %s: %v", key, addr, err)
	}
}

// etcdGet reads key on addr without going through the leader
// (serializable), so it shows what that member itself holds.
func etcdGet(tb testing.TB, addr, key string) string {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"key": b64(key), "serializable": true})
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Post("http://"+addr+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("get %s on %s: %v", key, addr, err)
	}
	defer resp.Body.Close()
	var r struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		tb.Fatalf("get %s on %s: %v", key, addr, err)
	}
	if len(r.Kvs) == 0 {
		return ""
	}
	v, _ := base64.StdEncoding.DecodeString(r.Kvs[0].Value)
	return string(v)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// Close leaves the members' logs and removes their data directories: etcd
// preallocates a 64 MB WAL per member, which every trial folder would keep.
func TestEtcd_CloseRemovesData(t *testing.T) {
	testetcd.Require(t)
	dir := t.TempDir()
	b, err := cluster.NewProcessBackend(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, cluster.Topology{Etcd: 3})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := filepath.Glob(filepath.Join(dir, "e*", "data"))
	if len(data) != 3 {
		t.Fatalf("data directories while running: %v, want 3", data)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if data, _ := filepath.Glob(filepath.Join(dir, "e*", "data*")); len(data) != 0 {
		t.Errorf("data directories (or a lazy disk's backing) left after Close: %v", data)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "e*.log")); len(logs) != 3 {
		t.Errorf("member logs after Close: %v, want 3", logs)
	}
}
