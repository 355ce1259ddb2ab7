package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxies is an in-process toxiproxy server. It opens no HTTP API: faults are
// applied by calling [Link] methods directly, so nothing listens beyond the
// proxies themselves, all on 127.0.0.1.
type Proxies struct {
	server *toxiproxy.ApiServer
	mu     sync.Mutex
	links  []*Link
}

// NewProxies returns an empty in-process toxiproxy server.
func NewProxies() *Proxies {
	return &Proxies{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
}

// Add starts a proxy named name forwarding to upstream, listening on a
// reserved loopback port (see ports.go), so a cut link reopens on the same
// address however long it was down.
func (p *Proxies) Add(name, upstream string) (*Link, error) {
	var (
		px  *toxiproxy.Proxy
		res *portReservation
		err error
	)
	for range 3 {
		if res, err = reservePort(); err != nil {
			return nil, err
		}
		px = toxiproxy.NewProxy(p.server, name, net.JoinHostPort("127.0.0.1", strconv.Itoa(res.port)), upstream)
		if err = p.server.Collection.Add(px, true); err == nil {
			break
		}
		res.Release()
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: proxy %s: %w", name, err)
	}
	l := &Link{proxy: px, name: name, reservation: res}
	p.mu.Lock()
	p.links = append(p.links, l)
	p.mu.Unlock()
	return l, nil
}

// Close stops every proxy. It is idempotent.
func (p *Proxies) Close() {
	p.mu.Lock()
	links := p.links
	p.links = nil
	p.mu.Unlock()
	for _, l := range links {
		l.proxy.Toxics.ResetToxics(context.Background())
		_ = p.server.Collection.Remove(l.name)
		l.reservation.Release()
	}
}

// A Link is one proxied path to a node: clients, or a replica's replication
// stream. Its faults apply to new and established connections alike.
type Link struct {
	proxy       *toxiproxy.Proxy
	name        string
	reservation *portReservation
	mu          sync.Mutex
	cut         bool
}

// Name returns the proxy's name, e.g. "n1" or "n1-repl".
func (l *Link) Name() string { return l.name }

// Addr returns the proxy's listen address, the one clients dial.
func (l *Link) Addr() string {
	l.proxy.Lock()
	defer l.proxy.Unlock()
	return l.proxy.Listen
}

// Upstream returns the address the proxy forwards to.
func (l *Link) Upstream() string {
	l.proxy.Lock()
	defer l.proxy.Unlock()
	return l.proxy.Upstream
}

// Cut closes every connection through the link and refuses new ones until
// [Link.Restore]. It is idempotent.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return
	}
	l.proxy.Stop()
	l.cut = true
}

// IsCut reports whether the link is cut by [Link.Cut] (or could not be
// reopened after [Link.DropConnections]) and refuses connections.
func (l *Link) IsCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

// Restore reopens a link closed by [Link.Cut] on the same address. It is idempotent.
func (l *Link) Restore() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cut {
		return nil
	}
	if err := l.relisten(); err != nil {
		return fmt.Errorf("cluster: restore %s: %w", l.name, err)
	}
	l.cut = false
	return nil
}

// AddToxic adds a toxiproxy toxic of type typ ("latency", "timeout", ...) on
// stream ("upstream" = towards Redis, "downstream" = replies) with the given
// attributes, under a unique name.
func (l *Link) AddToxic(name, typ, stream string, attrs map[string]any) error {
	body, err := json.Marshal(map[string]any{
		"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs,
	})
	if err != nil {
		return err
	}
	if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("cluster: toxic %s on %s: %w", name, l.name, err)
	}
	return nil
}

// HasToxic reports whether the link has a toxic of that name.
func (l *Link) HasToxic(name string) bool {
	return l.proxy.Toxics.GetToxic(name) != nil
}

// DropConnections closes every connection established through the link;
// new ones are accepted as before. On a cut link it does nothing.
func (l *Link) DropConnections() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return nil
	}
	l.proxy.Stop()
	if err := l.relisten(); err != nil {
		l.cut = true
		return fmt.Errorf("cluster: reopen %s: %w", l.name, err)
	}
	return nil
}

// RemoveToxic removes the named toxic; a missing one is not an error.
func (l *Link) RemoveToxic(ctx context.Context, name string) error {
	err := l.proxy.Toxics.RemoveToxic(ctx, name)
	if err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("cluster: remove toxic %s from %s: %w", name, l.name, err)
	}
	return nil
}

// SetUpstream points the link at a new upstream, keeping its listen address.
// Established connections are closed.
func (l *Link) SetUpstream(upstream string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	listen := l.Addr()
	err := l.proxy.Update(&toxiproxy.Proxy{Listen: listen, Upstream: upstream, Enabled: !l.cut})
	if errors.Is(err, syscall.EADDRINUSE) {
		err = l.relisten()
	}
	if err != nil {
		return fmt.Errorf("cluster: retarget %s: %w", l.name, err)
	}
	return nil
}

// relisten starts the stopped proxy on its address again. The port is
// reserved, but a child this process is forking at that moment (any
// exec.Cmd, e.g. a redis-server starting) holds a copy of the old listening
// socket until it execs, so EADDRINUSE is retried for a while.
func (l *Link) relisten() error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := l.proxy.Start()
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}
