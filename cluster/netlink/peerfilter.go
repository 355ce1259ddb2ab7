package netlink

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// A PeerFilter is the address an etcd member announces to its peers:
// it forwards every connection to the member's Peer link, unless a
// partition separates the member that dialled it from the owner. A Peer
// link alone cannot make that partition: etcd members reach each other
// both over streams the receiver dials and over HTTP posts the sender
// dials, so cutting one member's inbound connections still lets its
// messages out (docs/etcd.md). The filter's sender function tells the
// dialling member; package cluster answers from the connection's source
// port, which /proc/net/tcp maps to a socket inode that one member process
// holds (the process backend runs them all on this host). HTTP headers
// would not do: a follower forwards lease keep-alives
// to the leader without naming itself. A connection across the cut is
// black-holed (held open, nothing forwarded either way), as a real
// partition would; when the cut heals it is closed, so the peers reconnect.
type PeerFilter struct {
	owner    string                     // the member's name
	sender   func(conn net.Conn) string // the dialling member's name, "" if none
	cut      func(sender string) bool   // whether a partition cuts that member off
	upstream string
	ln       net.Listener

	mu    sync.Mutex
	conns map[*peerConn]struct{}
}

// peerConn is one connection through a PeerFilter.
type peerConn struct {
	sender string // the dialling member's name, "" if not a member
	down   net.Conn
	up     net.Conn // nil while black-holed
	closed bool     // closed by CloseCrossing, not yet gone from conns
}

// NewPeerFilter starts a filter on a loopback port forwarding to upstream,
// the Peer link of the member named owner. sender names the member that
// dialled a connection ("" if none); cut reports whether a partition
// separates that member from the owner.
func NewPeerFilter(owner, upstream string, sender func(conn net.Conn) string, cut func(sender string) bool) (*PeerFilter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netlink: peer filter of %s: %w", owner, err)
	}
	f := &PeerFilter{owner: owner, sender: sender, cut: cut, upstream: upstream, ln: ln, conns: map[*peerConn]struct{}{}}
	go f.serve()
	return f, nil
}

// Addr returns the filter's listen address, the one the member announces.
func (f *PeerFilter) Addr() string { return f.ln.Addr().String() }

func (f *PeerFilter) serve() {
	for {
		down, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.handle(down)
	}
}

func (f *PeerFilter) handle(down net.Conn) {
	pc := &peerConn{sender: f.sender(down), down: down}
	f.mu.Lock()
	f.conns[pc] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, pc)
		f.mu.Unlock()
		_ = down.Close()
	}()
	if f.cut(pc.sender) {
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

// CloseCrossing closes the connections whose sender and owner the sides
// now separate (held ones stay held), or, when cut is false, every held
// connection, so the peers reconnect through the healed filter.
func (f *PeerFilter) CloseCrossing(cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for pc := range f.conns {
		crossing := f.cut(pc.sender)
		if (cut && crossing && pc.up != nil) || (!cut && pc.up == nil) {
			pc.closed = true
			_ = pc.down.Close()
			if pc.up != nil {
				_ = pc.up.Close()
			}
		}
	}
}

// OpenAcross returns a connection into f's member from a member the
// current cut separates it from that still forwards, as "e1->e2", or "".
func (f *PeerFilter) OpenAcross() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for pc := range f.conns {
		if pc.up != nil && !pc.closed && f.cut(pc.sender) {
			return pc.sender + "->" + f.owner
		}
	}
	return ""
}

// Close stops the filter and closes every connection through it.
func (f *PeerFilter) Close() {
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
