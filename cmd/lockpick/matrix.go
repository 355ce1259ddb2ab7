package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

type matrixFlags struct {
	run           runFlags
	file          string
	rows, columns []string
	markdown      string
	list          bool
}

func newMatrixCmd() *cobra.Command {
	var f matrixFlags
	cmd := &cobra.Command{
		Use:   "matrix [--file F] [--rows R,...] [--columns C,...] [--trials N]",
		Short: "Put lock services side by side: each through the same fault classes, N trials a cell",
		Long: `Matrix runs a table of scenarios: each row a lock service (Redis SET NX PX,
the reentrant lock, Redlock, etcd's Mutex, PostgreSQL advisory locks,
go-zookeeper's lock and Apache Curator's InterProcessMutex, with and without
fencing), each column a class of fault (failover or leader loss, crash-restart, power loss,
holder pause, clock jump, holder cut off), each cell the catalogue scenario
or arm that plays that fault against that lock. It prints, cell by cell, the
violations over conclusive trials, the 95% Wilson interval and the median
time to the first violation, as a Markdown table (the README's), and writes
a run folder with a folder per cell, matrix.json and matrix.md.

The built-in matrix is campaign/services.yaml; --file takes another in the
same format (docs/matrix.md); --list prints its rows, columns and cells
without running anything. A row may name a lock program (program:) that
plays its cells in place of each scenario's lock: the built-in Curator rows
run examples/curatorlock/curatorlock, found from the repository's root;
elsewhere their cells are left empty, with the reason. A cell whose scenario did not match its own
expectation is marked (!) and makes matrix exit 1, as compare does.`,
		Example: "  lockpick matrix --trials 20 --parallel 2\n  lockpick matrix --rows etcd,etcd-fenced --columns holder-pause --trials 5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return matrix(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "take the matrix from this YAML file (default: the built-in lock services matrix)")
	fl.StringSliceVar(&f.rows, "rows", nil, "rows to run, in order (default: all)")
	fl.StringSliceVar(&f.columns, "columns", nil, "columns to run, in order (default: all)")
	fl.StringVar(&f.markdown, "markdown", "", "also write the table to this file")
	fl.BoolVar(&f.list, "list", false, "print the matrix's rows, columns and cells (the names --rows and --columns take) and exit")
	fl.IntVarP(&f.run.trials, "trials", "n", 20, "trials per cell")
	fl.Uint64Var(&f.run.seed, "seed", 1, "seed of each cell's first trial; trial i uses seed+i-1")
	fl.IntVarP(&f.run.parallel, "parallel", "p", 1, "trials to run at once (each has its own nodes and ports)")
	fl.StringVar(&f.run.out, "out", "results/runs", "folder to create the run folder in")
	fl.BoolVarP(&f.run.quiet, "quiet", "q", false, "no progress bar")
	fl.StringVar(&f.run.backend, "backend", "process", "where the nodes run: process or docker")
	return cmd
}

func matrix(ctx context.Context, out io.Writer, f matrixFlags) error {
	if f.run.trials < 1 || f.run.parallel < 1 {
		return usageError("matrix: --trials and --parallel must be at least 1")
	}
	m, err := loadMatrix(f)
	if err != nil {
		return usageError("matrix: " + err.Error())
	}
	if f.list {
		printMatrixLines(out, m)
		return nil
	}
	m, notes := m.WithoutMissingPrograms()
	for _, n := range notes {
		if len(f.rows) > 0 { // asked for by name: run it or say why not
			return usageError("matrix: " + n)
		}
		fmt.Fprintln(os.Stderr, "lockpick: matrix: "+n)
	}
	list, err := m.Scenarios()
	if err != nil {
		return usageError("matrix: " + err.Error())
	}
	if err := backendFits(f.run.backend, list...); err != nil {
		return usageError("matrix: " + err.Error())
	}
	nb, err := backendFactory(f.run.backend, "")
	if err != nil {
		return usageError("matrix: " + err.Error())
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll()
	bar := newBar("matrix", f.run, m.Runs()*f.run.trials)
	r, dir, err := campaign.RunMatrix(ctx, m, &trial.Options{Trials: f.run.trials, Seed: f.run.seed, Out: f.run.out,
		Parallel: f.run.parallel, Backend: nb, Progress: func(done, _ int) { _ = bar.Set(done) }},
		serverVersions()...)
	_ = bar.Finish()
	switch {
	case ctx.Err() != nil:
		return &exitError{code: 130, err: errors.New("interrupted; every node was stopped and no run folder was kept")}
	case errors.Is(err, scenario.ErrBadScenario), errors.Is(err, scenario.ErrUnknownScenario):
		return usageError(err.Error())
	case err != nil:
		return infraError(err)
	}
	fmt.Fprint(out, r.Markdown())
	if f.markdown != "" {
		if err := os.WriteFile(f.markdown, []byte(r.Markdown()), 0o644); err != nil {
			return infraError(err)
		}
	}
	fmt.Fprintf(out, "\nresults: %s\n", dir)
	if bad := r.Unmatched(); len(bad) > 0 {
		return mismatch("%d cells did not match their scenario's expectation: %s", len(bad), strings.Join(bad, "; "))
	}
	return nil
}

// printMatrixLines prints m's rows and columns, name, label and summary,
// and each cell's scenario or why it is empty.
func printMatrixLines(w io.Writer, m campaign.Matrix) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, part := range []struct {
		title string
		lines []results.MatrixLine
	}{{"ROW", m.Rows}, {"COLUMN", m.Columns}} {
		fmt.Fprintf(tw, "%s\tLABEL\tSUMMARY\n", part.title)
		for _, l := range part.lines {
			summary := l.Summary
			if len(l.Program) > 0 {
				summary += " (lock program: " + strings.Join(l.Program, " ") + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, l.Label, summary)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "CELL\tPLAYS")
	for _, c := range m.Cells {
		plays := c.Scenario
		if c.Arm != "" {
			plays += "[" + c.Arm + "]"
		}
		if plays == "" {
			plays = "— " + c.Why
		}
		fmt.Fprintf(tw, "%s × %s\t%s\n", c.Row, c.Column, plays)
	}
	_ = tw.Flush()
}

func loadMatrix(f matrixFlags) (campaign.Matrix, error) {
	m, err := campaign.Services()
	if f.file != "" {
		m, err = campaign.LoadMatrix(f.file)
	}
	if err != nil {
		return m, err
	}
	return m.Select(f.rows, f.columns)
}

// serverVersions names the redis-server, etcd, PostgreSQL and ZooKeeper
// on this host, for the table's legend; a missing one is left out.
func serverVersions() []string {
	var out []string
	for _, c := range [][]string{{"redis-server", "redis-server"}, {"etcd", "etcd"},
		{"PostgreSQL", filepath.Join(cluster.PostgresBinDir, "postgres")}} {
		b, err := exec.Command(c[1], "--version").Output()
		if v := versionIn(string(b)); err == nil && v != "" {
			out = append(out, c[0]+" "+v)
		}
	}
	if v := cluster.ZooKeeperVersion(); v != "" {
		out = append(out, "ZooKeeper "+v)
	}
	return out
}

// versionIn finds "v=7.0.15", "etcd Version: 3.4.23" or "postgres
// (PostgreSQL) 15.18" in a --version line.
func versionIn(s string) string {
	for _, f := range strings.Fields(s) {
		f = strings.TrimPrefix(f, "v=")
		if len(f) > 0 && f[0] >= '0' && f[0] <= '9' && strings.Contains(f, ".") {
			return f
		}
	}
	return ""
}
