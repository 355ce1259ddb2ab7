package netlink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// changeTimeout bounds one change to a link (a toxic added, removed or
// read; the proxy stopped or started). toxiproxy (v2.5.0 to v2.12.0) can
// deadlock changing a link's toxics while a connection through it is dying
// (Shopify/toxiproxy#558: a toxic blocked sending to a writer that has gone
// never reads the interrupt, and the change waits for it holding the
// link's lock). Past the bound the link is wedged: see [ErrWedged].
const changeTimeout = 10 * time.Second

// settleAfterCleanup is how long removing a toxic that closes connections
// on removal (toxiproxy's timeout toxic) waits before the next change, so
// the connections it closed unregister first. Without it, a change right
// after (a partition healed, then a latency) deadlocks in about one try in
// two.
const settleAfterCleanup = 50 * time.Millisecond

// Proxies is an in-process toxiproxy server. It opens no HTTP API: faults are
// applied by calling [Link] methods directly, so nothing listens beyond the
// proxies themselves, all on 127.0.0.1.
type Proxies struct {
	server  *toxiproxy.ApiServer
	mu      sync.Mutex
	links   []*Link
	timeout time.Duration // of one change; changeTimeout unless a test shortens it
}

// NewProxies returns an empty in-process toxiproxy server.
func NewProxies() *Proxies {
	return &Proxies{
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		timeout: changeTimeout,
	}
}

// Add starts a proxy named name forwarding to upstream, listening on a
// reserved loopback port (see [ReservePort]), so a cut link reopens on the same
// address however long it was down.
func (p *Proxies) Add(name, upstream string) (*Link, error) {
	var (
		px     *toxiproxy.Proxy
		res    *PortReservation
		listen string
		err    error
	)
	for range 3 {
		if res, err = ReservePort(); err != nil {
			return nil, err
		}
		listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(res.port))
		px = toxiproxy.NewProxy(p.server, name, listen, upstream)
		if err = p.server.Collection.Add(px, true); err == nil {
			break
		}
		res.Release()
	}
	if err != nil {
		return nil, fmt.Errorf("netlink: proxy %s: %w", name, err)
	}
	l := &Link{
		proxy: px, name: name, listen: listen, upstream: upstream, reservation: res,
		timeout: p.timeout, turn: make(chan struct{}, 1),
	}
	p.mu.Lock()
	p.links = append(p.links, l)
	p.mu.Unlock()
	return l, nil
}

// All returns the links, in the order they were added.
func (p *Proxies) All() []*Link {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.links)
}

// Close stops every proxy. It is idempotent and returns within two
// change bounds (a wait for its turn, then the stop): a link that does not
// stop in time is abandoned, its port and goroutines held until the
// process exits (one stuck stop holds toxiproxy's collection lock, so the
// links closing behind it are abandoned too).
func (p *Proxies) Close() {
	p.mu.Lock()
	links := p.links
	p.links = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Go(func() {
			// No toxic is removed first: stopping the proxy closes every
			// connection, and removals are what can deadlock.
			err := l.change(context.Background(), "close", func() error {
				return p.server.Collection.Remove(l.name)
			})
			if !errors.Is(err, ErrWedged) {
				l.reservation.Release()
			}
		})
	}
	wg.Wait()
}

// A Link is one proxied path to a node: clients, or a replica's replication
// stream. Its faults apply to new and established connections alike.
// Changes to a link are made one at a time, each bounded in time.
type Link struct {
	proxy       *toxiproxy.Proxy
	name        string
	listen      string
	reservation *PortReservation
	timeout     time.Duration
	turn        chan struct{} // holds a token while a change runs

	mu       sync.Mutex // guards the fields below
	cut      bool
	holders  map[string]bool // who cut it (see CutBy)
	upstream string
	wedged   string // the change stuck past the bound, "" if none
}

// Name returns the proxy's name, e.g. "n1" or "n1-repl".
func (l *Link) Name() string { return l.name }

// Addr returns the proxy's listen address, the one clients dial.
func (l *Link) Addr() string { return l.listen }

// Upstream returns the address the proxy forwards to.
func (l *Link) Upstream() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.upstream
}

// change runs fn as the link's only change in progress, for at most the
// link's bound once its turn comes. A change still running past it wedges
// the link: change returns an error wrapping [ErrWedged] at once, and so
// does every later change until the stuck one ends. fn goes on in the
// background when ctx ends first, and still wedges the link if it sticks.
func (l *Link) change(ctx context.Context, what string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.wedgedErr(); err != nil {
		return err
	}
	queued := time.NewTimer(l.timeout)
	defer queued.Stop()
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-queued.C:
		if err := l.wedgedErr(); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s on %s waited %v for an earlier change", ErrWedged, what, l.name, l.timeout)
	}
	var finished bool // guarded by l.mu
	done := make(chan error, 1)
	go func() {
		err := fn()
		l.mu.Lock()
		finished, l.wedged = true, ""
		l.mu.Unlock()
		<-l.turn
		done <- err
	}()
	// wedge marks the link wedged unless fn has finished, and says which.
	wedge := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !finished {
			l.wedged = what
		}
		return !finished
	}
	bound := time.NewTimer(l.timeout)
	select {
	case err := <-done:
		bound.Stop()
		return err
	case <-ctx.Done():
		go func() { // still bound fn, so a later change fails fast if it sticks
			defer bound.Stop()
			select {
			case <-done:
			case <-bound.C:
				wedge()
			}
		}()
		return ctx.Err()
	case <-bound.C:
		if !wedge() {
			return <-done
		}
		return l.wedgedErr()
	}
}

// wedgedErr returns an error wrapping [ErrWedged] if a change to the link
// is stuck, and nil otherwise.
func (l *Link) wedgedErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wedged == "" {
		return nil
	}
	return fmt.Errorf("%w: %s on %s did not finish within %v (toxiproxy deadlock, Shopify/toxiproxy#558); the link is unusable for the rest of this run",
		ErrWedged, l.wedged, l.name, l.timeout)
}

// Cut closes every connection through the link and refuses new ones until
// [Link.Restore]. It is idempotent.
func (l *Link) Cut() error { return l.CutBy("") }

// CutBy cuts the link as [Link.Cut] does, on behalf of holder (a fault
// kind): the link reopens only once every holder that cut it has restored
// it, so two kinds of fault that cut one link (a replication cut and a bus
// partition) do not heal each other. It is idempotent per holder.
func (l *Link) CutBy(holder string) error {
	return l.change(context.Background(), "cut", func() error {
		l.mu.Lock()
		if l.holders == nil {
			l.holders = map[string]bool{}
		}
		l.holders[holder] = true
		l.mu.Unlock()
		if l.IsCut() {
			return nil
		}
		l.proxy.Stop()
		l.setCut(true)
		return nil
	})
}

// IsCut reports whether the link is cut by [Link.Cut] (or could not be
// reopened after [Link.DropConnections]) and refuses connections.
func (l *Link) IsCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

func (l *Link) setCut(cut bool) {
	l.mu.Lock()
	l.cut = cut
	l.mu.Unlock()
}

// Restore reopens a link closed by [Link.Cut] on the same address. It is idempotent.
func (l *Link) Restore() error { return l.RestoreBy("") }

// RestoreBy withdraws holder's cut (see [Link.CutBy]) and reopens the link
// on the same address if no other holder keeps it cut. It is idempotent.
func (l *Link) RestoreBy(holder string) error {
	return l.change(context.Background(), "restore", func() error {
		l.mu.Lock()
		delete(l.holders, holder)
		others := len(l.holders)
		l.mu.Unlock()
		if !l.IsCut() || others > 0 {
			return nil
		}
		if err := l.relisten(); err != nil {
			return fmt.Errorf("netlink: restore %s: %w", l.name, err)
		}
		l.setCut(false)
		return nil
	})
}

// AddToxic adds a toxiproxy toxic of type typ ("latency", "timeout", ...) on
// stream ("upstream" = towards Redis, "downstream" = replies) with the given
// attributes, under a unique name.
func (l *Link) AddToxic(ctx context.Context, name, typ, stream string, attrs map[string]any) error {
	body, err := json.Marshal(map[string]any{
		"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs,
	})
	if err != nil {
		return err
	}
	return l.change(ctx, "adding toxic "+name, func() error {
		if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			return fmt.Errorf("netlink: toxic %s on %s: %w", name, l.name, err)
		}
		return nil
	})
}

// Toxic returns the link's toxic of that name, or nil if it has none.
func (l *Link) Toxic(ctx context.Context, name string) (*toxics.ToxicWrapper, error) {
	var t *toxics.ToxicWrapper
	err := l.change(ctx, "reading toxic "+name, func() error {
		t = l.proxy.Toxics.GetToxic(name)
		return nil
	})
	return t, err
}

// Faulted says what fault the link is left with: "cut", "wedged", "2
// toxics"; "" for a link that forwards untouched.
func (l *Link) Faulted(ctx context.Context) string {
	l.mu.Lock()
	cut, wedged := l.cut, l.wedged
	l.mu.Unlock()
	switch {
	case wedged != "":
		return "wedged"
	case cut:
		return "cut"
	}
	n := 0
	if err := l.change(ctx, "listing toxics", func() error {
		n = len(l.proxy.Toxics.GetToxicArray())
		return nil
	}); err != nil {
		return err.Error()
	}
	if n > 0 {
		return fmt.Sprintf("%d toxics", n)
	}
	return ""
}

// DropConnections closes every connection established through the link;
// new ones are accepted as before. On a cut link it does nothing.
func (l *Link) DropConnections() error {
	return l.change(context.Background(), "dropping connections", func() error {
		if l.IsCut() {
			return nil
		}
		l.proxy.Stop()
		if err := l.relisten(); err != nil {
			l.setCut(true)
			return fmt.Errorf("netlink: reopen %s: %w", l.name, err)
		}
		return nil
	})
}

// RemoveToxic removes the named toxic; a missing one is not an error.
func (l *Link) RemoveToxic(ctx context.Context, name string) error {
	return l.change(ctx, "removing toxic "+name, func() error {
		t := l.proxy.Toxics.GetToxic(name)
		if t == nil {
			return nil
		}
		_, closes := t.Toxic.(toxics.CleanupToxic)
		err := l.proxy.Toxics.RemoveToxic(context.Background(), name)
		if err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
			return fmt.Errorf("netlink: remove toxic %s from %s: %w", name, l.name, err)
		}
		if closes {
			time.Sleep(settleAfterCleanup)
		}
		return nil
	})
}

// SetUpstream points the link at a new upstream, keeping its listen address.
// Established connections are closed.
func (l *Link) SetUpstream(upstream string) error {
	return l.change(context.Background(), "retargeting", func() error {
		err := l.proxy.Update(&toxiproxy.Proxy{Listen: l.listen, Upstream: upstream, Enabled: !l.IsCut()})
		if errors.Is(err, syscall.EADDRINUSE) {
			err = l.relisten()
		}
		if err != nil {
			return fmt.Errorf("netlink: retarget %s: %w", l.name, err)
		}
		l.mu.Lock()
		l.upstream = upstream
		l.mu.Unlock()
		return nil
	})
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
