package cluster

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Clock moves the clocks of one process started with the clock shim
// (clockshim/clockshim.c, preloaded when [ProcessBackend.ClockShim] is set).
// The shim maps a small file shared with the Clock and computes
//
//	wall      = wallAnchorFake + (trueWall      - wallAnchorTrue) × rate
//	monotonic = monoAnchorFake + (trueMonotonic - monoAnchorTrue) × rate
//
// for CLOCK_REALTIME (and gettimeofday and time, which Redis uses for key
// expiry and TIME) and CLOCK_MONOTONIC (Redis's timers). Every change
// re-anchors at the current instant, so both clocks stay continuous except
// for the wall-clock step a [Clock.Jump] asks for; the monotonic clock never
// steps, because Redis's event loop would stall or race if it did.
//
// A Clock is safe for concurrent use. It outlives its process's restarts: a
// restarted node comes back with the same skew, as a real host would.
type Clock struct {
	path string
	mu   sync.Mutex
}

// The file layout shared with clockshim.c.
const (
	clockOffMagic    = 0
	clockOffSeq      = 8
	clockOffRTReal   = 16
	clockOffRTFake   = 24
	clockOffMonoReal = 32
	clockOffMonoFake = 40
	clockOffRate     = 48
	clockFileSize    = 4096
	ppb              = 1_000_000_000
)

// clockState is the shim's parameters; rate is in parts per billion.
type clockState struct {
	rtReal, rtFake, monoReal, monoFake, rate int64
}

// identity is the state of a clock that tells the true time.
var identity = clockState{rate: ppb}

// Path returns the clock file a shimmed process reads its clock from.
func (c *Clock) Path() string { return c.path }

// NewClock creates the clock file at path, telling the true time.
func NewClock(path string) (*Clock, error) {
	b := make([]byte, clockFileSize)
	copy(b[clockOffMagic:], "LPCLOCK1")
	binary.LittleEndian.PutUint64(b[clockOffRate:], ppb)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, fmt.Errorf("cluster: clock file: %w", err)
	}
	return &Clock{path: path}, nil
}

// Jump steps the wall clock by d (forward if positive, back if negative)
// at once. The monotonic clock does not move. Errors are file errors.
func (c *Clock) Jump(d time.Duration) error {
	return c.update(func(s clockState, rt, mono int64) clockState {
		fakeRT, fakeMono := s.at(rt, mono)
		return clockState{rtReal: rt, rtFake: fakeRT + int64(d), monoReal: mono, monoFake: fakeMono, rate: s.rate}
	})
}

// SetRate makes both clocks advance rate times as fast as true time from
// now on (2 = twice as fast, 0.5 = half as fast). It returns [ErrBadFault]
// for a rate that is not positive and finite.
func (c *Clock) SetRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("%w: clock rate %v", ErrBadFault, rate)
	}
	return c.update(func(s clockState, rt, mono int64) clockState {
		fakeRT, fakeMono := s.at(rt, mono)
		return clockState{rtReal: rt, rtFake: fakeRT, monoReal: mono, monoFake: fakeMono, rate: int64(math.Round(rate * ppb))}
	})
}

// Reset puts the wall clock back on true time at the true rate, undoing
// every jump and rate change. The monotonic clock keeps its current reading
// and goes on at the true rate.
func (c *Clock) Reset() error {
	return c.update(func(s clockState, rt, mono int64) clockState {
		_, fakeMono := s.at(rt, mono)
		return clockState{rtReal: rt, rtFake: rt, monoReal: mono, monoFake: fakeMono, rate: ppb}
	})
}

// Offset returns how far the process's wall clock is ahead of true time
// (negative when behind).
func (c *Clock) Offset() (time.Duration, error) {
	var off time.Duration
	err := c.update(func(s clockState, rt, mono int64) clockState {
		fakeRT, _ := s.at(rt, mono)
		off = time.Duration(fakeRT - rt)
		return s
	})
	return off, err
}

// at returns the fake wall and monotonic readings for true readings rt, mono.
func (s clockState) at(rt, mono int64) (fakeRT, fakeMono int64) {
	return s.rtFake + scale(rt-s.rtReal, s.rate), s.monoFake + scale(mono-s.monoReal, s.rate)
}

// scale returns elapsed × rate / 1e9 without overflow, as the shim's int128 does.
func scale(elapsed, rate int64) int64 {
	if rate == ppb {
		return elapsed
	}
	var x big.Int
	x.Mul(big.NewInt(elapsed), big.NewInt(rate))
	x.Quo(&x, big.NewInt(ppb))
	return x.Int64()
}

// update maps the clock file, reads the state, and writes fn's result under
// the seqlock the shim reads with. fn gets the true wall and monotonic time.
func (c *Clock) update(fn func(s clockState, rt, mono int64) clockState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("cluster: clock: %w", err)
	}
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, clockFileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("cluster: clock: mmap: %w", err)
	}
	defer func() { _ = unix.Munmap(b) }()
	word := func(off int) *int64 { return (*int64)(unsafe.Pointer(&b[off])) }
	old := clockState{
		rtReal: atomic.LoadInt64(word(clockOffRTReal)), rtFake: atomic.LoadInt64(word(clockOffRTFake)),
		monoReal: atomic.LoadInt64(word(clockOffMonoReal)), monoFake: atomic.LoadInt64(word(clockOffMonoFake)),
		rate: atomic.LoadInt64(word(clockOffRate)),
	}
	if old.rate <= 0 {
		old = identity
	}
	var rt, mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &rt); err != nil {
		return fmt.Errorf("cluster: clock: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return fmt.Errorf("cluster: clock: %w", err)
	}
	s := fn(old, rt.Nano(), mono.Nano())
	if s == old {
		return nil
	}
	seq := word(clockOffSeq)
	atomic.AddInt64(seq, 1) // odd: readers retry
	atomic.StoreInt64(word(clockOffRTReal), s.rtReal)
	atomic.StoreInt64(word(clockOffRTFake), s.rtFake)
	atomic.StoreInt64(word(clockOffMonoReal), s.monoReal)
	atomic.StoreInt64(word(clockOffMonoFake), s.monoFake)
	atomic.StoreInt64(word(clockOffRate), s.rate)
	atomic.AddInt64(seq, 1)
	return nil
}
