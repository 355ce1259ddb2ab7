package checker_test

import (
	"fmt"
	"time"

	"github.com/lockpick/lockpick/checker"
)

func ExampleCheck() {
	h, err := checker.ReadFile("testdata/double-grant.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	res := checker.CheckTimeout(h, nil, 10*time.Second)
	fmt.Println(res.Verdict, res.Counts())
	for _, a := range res.Anomalies {
		fmt.Println(a.Kind+":", a.Message)
	}
	// Output:
	// illegal map[double-grant:1]
	// double-grant: process 2 was granted lock "lock" on n2 at +1.204s while process 1 held it (granted on n1 at +0.950s, valid until +1.950s); leases overlapped for 746ms
}

func ExampleRecorder() {
	var now int64
	r := checker.NewRecorder(func() int64 { now += 1e6; return now }) // a fake clock: +1ms per event
	r.Record(checker.Event{Process: 1, Type: checker.Invoke, F: "acquire", Key: "lock"})
	r.Record(checker.Event{Process: 1, Type: checker.OK, F: "acquire", Key: "lock", Token: "t1", ValidUntil: 1e9})
	r.Record(checker.Event{Process: 1, Type: checker.Invoke, F: "release", Key: "lock", Token: "t1"})
	r.Record(checker.Event{Process: 1, Type: checker.OK, F: "release", Key: "lock"})
	res := checker.Check(r.History(), nil)
	fmt.Println(len(r.History()), res.Verdict)
	// Output:
	// 4 ok
}
