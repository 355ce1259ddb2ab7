package lockcore_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
)

// reply builds a script reply (value, error) of one of six shapes from
// fuzzer input, as go-redis would hand it over.
func reply(kind uint8, n int64, s string) (any, error) {
	switch kind % 6 {
	case 0:
		return nil, redis.Nil
	case 1:
		return n, nil
	case 2:
		return s, nil
	case 3:
		return nil, errors.New(s)
	case 4:
		return []any{n, s}, nil
	}
	return nil, nil // a nil value without an error: nothing go-redis returns
}

func TestParseAcquireReply(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v        any
		err      error
		acquired bool
		ttl      time.Duration
		wantErr  bool
	}{
		{"nil: taken", nil, redis.Nil, true, 0, false},
		{"pttl", int64(1500), nil, false, 1500 * time.Millisecond, false},
		{"no expiry", int64(-1), nil, false, 0, false},
		{"gone", int64(-2), nil, false, 0, false},
		{"huge", int64(math.MaxInt64), nil, false, math.MaxInt64, false},
		{"string", "OK", nil, false, 0, true},
		{"error", nil, errors.New("boom"), false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acquired, ttl, err := lockcore.ParseAcquireReply(tc.v, tc.err)
			if acquired != tc.acquired || ttl != tc.ttl || (err != nil) != tc.wantErr {
				t.Errorf("got (%v, %v, %v), want (%v, %v, error %v)", acquired, ttl, err, tc.acquired, tc.ttl, tc.wantErr)
			}
		})
	}
}

func FuzzParseAcquireReply(f *testing.F) {
	for kind := range uint8(6) {
		f.Add(kind, int64(30000), "30000")
	}
	f.Add(uint8(1), int64(-2), "")
	f.Add(uint8(1), int64(math.MaxInt64), "")
	f.Add(uint8(1), int64(math.MaxInt64/int64(time.Millisecond)+1), "")
	f.Fuzz(func(t *testing.T, kind uint8, n int64, s string) {
		v, rerr := reply(kind, n, s)
		acquired, ttl, err := lockcore.ParseAcquireReply(v, rerr)
		if ttl < 0 {
			t.Fatalf("negative wait %v from %#v, %v", ttl, v, rerr)
		}
		if got, want := acquired, kind%6 == 0; got != want {
			t.Fatalf("acquired = %v for %#v, %v", got, v, rerr)
		}
		if acquired && err != nil {
			t.Fatalf("acquired with an error: %v", err)
		}
		switch kind % 6 {
		case 1:
			if err != nil {
				t.Fatalf("PTTL %d: %v", n, err)
			}
			if n > 0 && n <= math.MaxInt64/int64(time.Millisecond) && ttl != time.Duration(n)*time.Millisecond {
				t.Fatalf("PTTL %d: wait %v", n, ttl)
			}
		case 2, 3, 4, 5:
			if err == nil {
				t.Fatalf("no error for %#v, %v", v, rerr)
			}
		}
	})
}

func FuzzParseReleaseReply(f *testing.F) {
	for kind := range uint8(6) {
		f.Add(kind, int64(1), "1")
	}
	f.Add(uint8(1), int64(0), "")
	f.Add(uint8(1), int64(2), "")
	f.Fuzz(func(t *testing.T, kind uint8, n int64, s string) {
		v, rerr := reply(kind, n, s)
		got, err := lockcore.ParseReleaseReply(v, rerr)
		var want = lockcore.ReleaseNotHeld
		wantErr := true
		switch {
		case kind%6 == 0:
			wantErr = false
		case kind%6 == 1 && n == 0:
			want, wantErr = lockcore.ReleaseHeld, false
		case kind%6 == 1 && n == 1:
			want, wantErr = lockcore.ReleaseDone, false
		}
		if (err != nil) != wantErr || (err == nil && got != want) {
			t.Fatalf("ParseReleaseReply(%#v, %v) = %v, %v; want %v, error %v", v, rerr, got, err, want, wantErr)
		}
	})
}
