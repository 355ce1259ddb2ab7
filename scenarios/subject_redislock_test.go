package scenarios_test

import "testing"

func TestRedislock_FailoverLockLoss(t *testing.T) {
	t.Parallel()
	wantFailoverDoubleGrant(t, runWith(t, "failover-lock-loss", "redislock", nil, nil))
}

func TestRedislock_FailoverWithoutFaults(t *testing.T) {
	t.Parallel()
	wantSafe(t, runWith(t, "failover-lock-loss", "redislock", nil, noFaults), 1)
}

func TestRedislock_SingleBaseline(t *testing.T) {
	t.Parallel()
	wantSafe(t, runWith(t, "single-baseline", "redislock", nil, nil), 10)
}
