package netlink

import (
	"bytes"
	"io"
	"net"
	"sync"
	"time"
)

// A BusFilter sits between a Redis Cluster node's Bus link and its cluster
// bus port. Every bus connection is opened by one peer, whose first message
// names it (the sender id at a fixed offset of the header), so the filter
// can drop the links between chosen nodes only: a partition of the cluster
// bus, which a proxy that cannot tell peers apart could not make. A link
// across a cut is black-holed, held open with nothing forwarded either
// way, as a real partition would; when the cut heals it is closed, so the
// peers reconnect on a clean stream.
type BusFilter struct {
	owner    string                   // the node's name
	cut      func(sender string) bool // whether a partition cuts that peer off
	name     func(id string) string   // a peer's name from its node id
	upstream string
	ln       net.Listener

	mu    sync.Mutex
	conns map[*busConn]struct{}
}

// busConn is one peer's connection through a BusFilter.
type busConn struct {
	sender string // the peer's node id, "" if the header was unreadable
	down   net.Conn
	up     net.Conn // nil while black-holed from the start

	mu   sync.Mutex
	held bool // black-holed
}

// busHeader is how much of the first message holds the sender: signature
// "RCmb", lengths, type, epochs and offset (40 bytes), then the 40-byte id.
const busHeader = 80

// NewBusFilter starts a filter on a loopback port forwarding to upstream,
// the cluster bus port of the node named owner. cut reports whether a
// partition separates the peer with that node id from the owner; name
// returns a peer's name from its node id, for [BusFilter.OpenAcross].
func NewBusFilter(owner, upstream string, cut func(sender string) bool, name func(id string) string) (*BusFilter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &BusFilter{owner: owner, cut: cut, name: name, upstream: upstream, ln: ln, conns: map[*busConn]struct{}{}}
	go f.serve()
	return f, nil
}

// Addr returns the filter's listen address, for the node's Bus link.
func (f *BusFilter) Addr() string { return f.ln.Addr().String() }

func (f *BusFilter) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.handle(c)
	}
}

func (f *BusFilter) handle(down net.Conn) {
	head := make([]byte, busHeader)
	_ = down.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.ReadFull(down, head)
	_ = down.SetReadDeadline(time.Time{})
	head = head[:n]
	bc := &busConn{down: down}
	if err == nil && bytes.HasPrefix(head, []byte("RCmb")) {
		bc.sender = string(bytes.TrimRight(head[40:80], "\x00"))
	}
	if !f.track(bc) {
		_ = down.Close()
		return
	}
	defer f.untrack(bc)
	if bc.isHeld() {
		_, _ = io.Copy(io.Discard, down) // until the peer or a heal closes it
		return
	}
	up, err := net.DialTimeout("tcp", f.upstream, time.Second)
	if err != nil {
		_ = down.Close()
		return
	}
	bc.mu.Lock()
	bc.up = up
	bc.mu.Unlock()
	if _, err := up.Write(head); err != nil {
		bc.close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { bc.pump(up, down); done <- struct{}{} }()
	go func() { bc.pump(down, up); done <- struct{}{} }()
	<-done
	bc.close()
	<-done
}

// pump copies from src to dst until either fails, dropping what it reads
// while the connection is black-holed.
func (bc *busConn) pump(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !bc.isHeld() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (bc *busConn) isHeld() bool {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.held
}

func (bc *busConn) close() {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	_ = bc.down.Close()
	if bc.up != nil {
		_ = bc.up.Close()
	}
}

// track registers bc, black-holed if its sender is cut from the owner. It
// returns false once the filter is closed.
func (f *BusFilter) track(bc *busConn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false
	}
	bc.held = f.cut(bc.sender)
	f.conns[bc] = struct{}{}
	return true
}

func (f *BusFilter) untrack(bc *busConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, bc)
}

// Recheck applies the current cuts to every open connection:
// one now across a cut is black-holed, one held across a healed cut is
// closed.
func (f *BusFilter) Recheck() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for bc := range f.conns {
		cut := f.cut(bc.sender)
		bc.mu.Lock()
		held := bc.held
		bc.held = held || cut
		bc.mu.Unlock()
		if held && !cut {
			bc.close()
		}
	}
}

// OpenAcross returns a connection into f's node from a peer across the
// current cut that still forwards, as "n1->n2", or "".
func (f *BusFilter) OpenAcross() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for bc := range f.conns {
		if !bc.isHeld() && f.cut(bc.sender) {
			return f.name(bc.sender) + "->" + f.owner
		}
	}
	return ""
}

// Close stops the filter and closes every connection through it.
func (f *BusFilter) Close() {
	_ = f.ln.Close()
	f.mu.Lock()
	conns := f.conns
	f.conns = nil
	f.mu.Unlock()
	for bc := range conns {
		bc.close()
	}
}
