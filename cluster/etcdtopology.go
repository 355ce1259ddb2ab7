package cluster

import (
	"context"
	"fmt"
	"time"
)

// EtcdIndex returns i for an etcd member named "e<i>" of t, else 0.
func (t Topology) EtcdIndex(node string) int { return memberIndex(node, "e", t.Etcd) }

// EtcdHealthy reports whether the etcd member n answers its /health with
// true on its own address (not its proxy) within timeout: it is up and
// its cluster has a leader. It is false for a node that is no etcd member.
func EtcdHealthy(ctx context.Context, n *Node, timeout time.Duration) bool {
	m, ok := n.Proc.(*etcdMember)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return etcdHealthy(ctx, m.Addr())
}

// IsEtcdMember reports whether n is an etcd member.
func IsEtcdMember(n *Node) bool {
	_, ok := n.Proc.(*etcdMember)
	return ok
}

// EtcdMemberID returns the member id the etcd member n reports on its own
// address (not its proxy), within timeout. A member replaced after its
// data was wiped comes back under a new id.
func EtcdMemberID(ctx context.Context, n *Node, timeout time.Duration) (string, error) {
	m, ok := n.Proc.(*etcdMember)
	if !ok {
		return "", fmt.Errorf("cluster: %s is not an etcd member", n.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := etcdStatusOf(ctx, m.Addr())
	if err == nil && st.Header.MemberID == "" {
		err = fmt.Errorf("cluster: %s's status has no member id", n.Name)
	}
	return st.Header.MemberID, err
}
