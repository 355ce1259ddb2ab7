package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The harness speaks to etcd members through etcd's gRPC gateway (JSON
// over HTTP on the client port, on by default in 3.4), on each member's own
// address, not its proxy: a fault on a link must not blind the harness.
// This keeps the etcd client library out of package cluster; the lock
// clients (package etcdlock) use the real client.

// etcdAPITimeout bounds one call of the harness to one member.
const etcdAPITimeout = 500 * time.Millisecond

// etcdStatus is the part of a maintenance status reply the harness reads.
// etcd's gateway writes 64-bit integers as strings.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
		RaftTerm string `json:"raft_term"`
	} `json:"header"`
	Leader   string `json:"leader"`
	RaftTerm string `json:"raftTerm"`
}

// etcdMemberInfo is one member of a member list reply.
type etcdMemberInfo struct {
	ID       string   `json:"ID"`
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
}

// etcdCall posts body as JSON to path on the member at addr and decodes the
// reply into out. A reply other than 200 is an error with etcd's message.
func etcdCall(ctx context.Context, addr, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, etcdAPITimeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		e := &etcdAPIError{Path: path, Addr: addr, Status: resp.Status}
		_ = json.Unmarshal(data, e)
		return e
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// An etcdAPIError is a reply other than 200 from etcd's gateway.
type etcdAPIError struct {
	Path, Addr, Status string
	Message            string `json:"message"` // etcd's error, e.g. "etcdserver: unhealthy cluster"
}

func (e *etcdAPIError) Error() string {
	return fmt.Sprintf("cluster: etcd %s on %s: %s: %s", e.Path, e.Addr, e.Status, e.Message)
}

// errEtcdUnhealthy is etcd's refusal of a membership change while a member
// has not been connected for 5s.
const errEtcdUnhealthy = "etcdserver: unhealthy cluster"

func etcdStatusOf(ctx context.Context, addr string) (etcdStatus, error) {
	var s etcdStatus
	err := etcdCall(ctx, addr, "/v3/maintenance/status", struct{}{}, &s)
	return s, err
}

func etcdMembers(ctx context.Context, addr string) ([]etcdMemberInfo, error) {
	var r struct {
		Members []etcdMemberInfo `json:"members"`
	}
	err := etcdCall(ctx, addr, "/v3/cluster/member/list", struct{}{}, &r)
	return r.Members, err
}

func etcdRemoveMember(ctx context.Context, addr, id string) error {
	return etcdCall(ctx, addr, "/v3/cluster/member/remove", map[string]string{"ID": id}, nil)
}

func etcdAddMember(ctx context.Context, addr, peerURL string) error {
	return etcdCall(ctx, addr, "/v3/cluster/member/add", map[string][]string{"peerURLs": {peerURL}}, nil)
}

// etcdHealthy reports whether the member at addr says it is healthy: it
// knows a leader and a read through the cluster succeeded.
func etcdHealthy(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, etcdAPITimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
}
