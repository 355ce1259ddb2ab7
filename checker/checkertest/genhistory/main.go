// Command genhistory writes a generated history (package checkertest) in
// JSON Lines form, for benchmarking `lockpick check` on files of any size:
//
//	go run ./checker/checkertest/genhistory -events 10000000 -o h.jsonl
//
// The defaults are the history of the checker's 100k benchmarks: 16
// processes, 4 locks, 1% of acquires and writes with an unknown outcome.
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
