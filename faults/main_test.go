package faults_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// clockShim is the clock shim library built once for the suite, or "" when
// gcc is missing (clock tests then skip).
var clockShim string

// helperEnv set to "ticker" makes the test binary a process that prints
// its wall clock in Unix nanoseconds every 10ms, forever, for the pause
// tests to freeze.
const helperEnv = "LOCKPICK_FAULTS_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "ticker" {
		for {
			fmt.Println(time.Now().UnixNano())
			time.Sleep(10 * time.Millisecond)
		}
	}
	var err error
	clockShim, err = testcluster.ClockShim()
	if err != nil {
		fmt.Println("clock tests will skip:", err)
	}
	os.Exit(m.Run())
}

// startClockCluster is startCluster with the clock shim preloaded.
func startClockCluster(tb testing.TB, topo cluster.Topology) *cluster.Cluster {
	tb.Helper()
	if clockShim == "" {
		tb.Skip("no clock shim (gcc missing)")
	}
	b := testcluster.NewBackend(tb)
	b.ClockShim = clockShim
	return testcluster.StartOn(tb, b, topo)
}
