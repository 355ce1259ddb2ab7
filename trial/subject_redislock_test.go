package trial_test

import (
	"testing"

	"github.com/lockpick/lockpick/internal/testredis"
)

func TestRedislock_FailoverLockLoss(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantFailoverDoubleGrant(t, runWith(t, "failover-lock-loss", "redislock", nil, nil))
}

func TestRedislock_FailoverWithoutFaults(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantSafe(t, runWith(t, "failover-lock-loss", "redislock", nil, noFaults), 1)
}

func TestRedislock_SingleBaseline(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantSafe(t, runWith(t, "single-baseline", "redislock", nil, nil), 10)
}
