package campaign

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// Compare runs each named arm of s for opt.Trials trials (all arms when arms
// is empty) and writes one run folder holding a folder per arm and
// compare.json. It returns the comparison and the folder's path.
func Compare(ctx context.Context, s scenario.Scenario, arms []string, opt *trial.Options) (*results.Comparison, string, error) {
	o := opt.WithDefaults()
	if len(arms) == 0 {
		arms = s.ArmNames()
	}
	if len(arms) < 2 {
		return nil, "", fmt.Errorf("%w: compare needs two arms; %d named (%s has %s)", scenario.ErrBadScenario, len(arms), s.Name, strings.Join(s.ArmNames(), ", "))
	}
	variants := make([]scenario.Scenario, len(arms))
	for i, a := range arms {
		v, err := s.Arm(a)
		if err != nil {
			return nil, "", err
		}
		variants[i] = v
	}
	if err := o.CheckShard(); err != nil {
		return nil, "", err
	}
	name := o.Name
	if name == "" {
		name = trial.FolderName("compare-", s.Name, o.Seed, o.Shard.Suffix())
	}
	dir, err := results.Create(o.Out, name)
	if err != nil {
		return nil, "", &trial.InfraError{Err: err}
	}
	began := time.Now()
	c := &results.Comparison{Scenario: s.Name, Seed: o.Seed, Trials: o.Trials}
	if !o.Shard.Whole() {
		c.Shard = o.Shard.String()
	}
	progress := o.Progress
	for i, v := range variants {
		ao := o
		ao.Out, ao.Name, ao.Arm = dir.Path(""), arms[i], arms[i]
		if progress != nil {
			ao.Progress = func(done, total int) { progress(i*total+done, len(arms)*total) }
		}
		verdict, _, err := trial.Run(ctx, v, &ao)
		if err != nil {
			dir.Abort()
			return nil, "", err
		}
		c.Arms = append(c.Arms, judge.Arm(arms[i], armSummary(s, arms[i]), verdict, arms[i]))
	}
	c.AddTests()
	c.WallSeconds = time.Since(began).Seconds()
	final, err := commitRun(dir, func() error {
		if err := dir.WriteJSON("compare.json", c); err != nil {
			return err
		}
		return c.WriteHTMLFile(dir.Path("report.html"))
	})
	if err != nil {
		return nil, "", err
	}
	return c, final, nil
}

// commitRun writes a finished run's own files with write and commits dir;
// on an error it aborts dir, so nothing half-written is left.
func commitRun(dir *results.RunDir, write func() error) (string, error) {
	err := write()
	final := ""
	if err == nil {
		final, err = dir.Commit()
	}
	if err != nil {
		dir.Abort()
		return "", &trial.InfraError{Err: err}
	}
	return final, nil
}

// armSummary is the named arm's own summary, if it has one.
func armSummary(s scenario.Scenario, name string) string {
	for _, a := range s.Arms {
		if a.Name == name {
			return a.Summary
		}
	}
	return ""
}
