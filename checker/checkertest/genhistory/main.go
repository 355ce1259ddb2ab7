// Command genhistory writes a generated history (package checkertest) in
// JSON Lines form, for benchmarking `lockpick check` on files of any size:
//
//	go run ./checker/checkertest/genhistory -events 10000000 -o h.jsonl
//
// The defaults are the history of the checker's 100k benchmarks: 16
// processes, 4 locks, 1% of acquires and writes with an unknown outcome.
// The workload of a history from elsewhere, with long leases, clients that
// release after an unknown acquire and two events 5ns out of time order:
//
//	go run ./checker/checkertest/genhistory -events 2000000 -ttl 60s -clean-up -late 2 -o h.jsonl
package main

import (
	"flag"
	"log"
	"os"
	"time"

	"github.com/lockpick/lockpick/checker/checkertest"
)

func main() {
	opt := checkertest.Options{Processes: 16, Keys: 4, TTL: time.Second, UnknownRate: 0.01, Seed: 1}
	flag.IntVar(&opt.Events, "events", 100_000, "number of events")
	flag.Uint64Var(&opt.Seed, "seed", opt.Seed, "seed of the simulation")
	flag.IntVar(&opt.Processes, "processes", opt.Processes, "number of clients")
	flag.IntVar(&opt.Keys, "keys", opt.Keys, "number of locks")
	flag.DurationVar(&opt.TTL, "ttl", opt.TTL, "lease time to live")
	flag.Float64Var(&opt.UnknownRate, "unknown", opt.UnknownRate, "chance that an acquire or a write ends unknown")
	flag.BoolVar(&opt.CleanUp, "clean-up", false, "a client releases the key after an unknown acquire")
	flag.IntVar(&opt.Crash, "crash", 0, "number of clients that crash holding a lease")
	flag.IntVar(&opt.Late, "late", 0, "number of events written out of time order")
	flag.DurationVar(&opt.LateBy, "late-by", 5*time.Nanosecond, "how far before their predecessor late events are written")
	out := flag.String("o", "", "output file (default: standard output)")
	flag.Parse()
	w := os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			log.Fatal(err)
		}
		w = f
	}
	if err := checkertest.WriteJSONL(w, &opt); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
}
