package subject

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A follower sends each command to whichever node the sentinels call the
// master of the first group now, as a Redlock client whose first "node" is
// a master with a replica and sentinels does. It is a redis.Scripter with
// SetNX, what lockcore's Redlock uses.
type follower struct {
	t *Target

	mu   sync.Mutex
	node string // the node the last command went to
}

var _ redis.Scripter = (*follower)(nil)

// client returns the current master's client, remembering its name.
func (f *follower) client(ctx context.Context) (*redis.Client, error) {
	rdb, node, err := f.t.master(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.node = node
	f.mu.Unlock()
	return rdb, nil
}

// Node returns the name of the node the last command went to.
func (f *follower) Node() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.node
}

func (f *follower) failed(ctx context.Context, err error) *redis.Cmd {
	c := redis.NewCmd(ctx)
	c.SetErr(err)
	return c
}

func (f *follower) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	rdb, err := f.client(ctx)
	if err != nil {
		return f.failed(ctx, err)
	}
	return rdb.Eval(ctx, script, keys, args...)
}

func (f *follower) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	rdb, err := f.client(ctx)
	if err != nil {
		return f.failed(ctx, err)
	}
	return rdb.EvalSha(ctx, sha1, keys, args...)
}

func (f *follower) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	rdb, err := f.client(ctx)
	if err != nil {
		return f.failed(ctx, err)
	}
	return rdb.EvalRO(ctx, script, keys, args...)
}

func (f *follower) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	rdb, err := f.client(ctx)
	if err != nil {
		return f.failed(ctx, err)
	}
	return rdb.EvalShaRO(ctx, sha1, keys, args...)
}

func (f *follower) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	rdb, err := f.client(ctx)
	if err != nil {
		c := redis.NewBoolSliceCmd(ctx)
		c.SetErr(err)
		return c
	}
	return rdb.ScriptExists(ctx, hashes...)
}

func (f *follower) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	rdb, err := f.client(ctx)
	if err != nil {
		c := redis.NewStringCmd(ctx)
		c.SetErr(err)
		return c
	}
	return rdb.ScriptLoad(ctx, script)
}

// SetNX sends SET NX PX to the current master.
func (f *follower) SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd {
	rdb, err := f.client(ctx)
	if err != nil {
		c := redis.NewBoolCmd(ctx)
		c.SetErr(err)
		return c
	}
	return rdb.SetNX(ctx, key, value, expiration)
}
