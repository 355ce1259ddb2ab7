package campaign

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockpick/lockpick/internal/suggest"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// A Matrix puts lock services (rows) through classes of fault (columns):
// each cell names a catalogue scenario, or one arm of it, that plays that
// fault against that lock, or says why the cell is empty.
type Matrix struct {
	Title   string               `yaml:"title"`
	Rows    []results.MatrixLine `yaml:"rows"`
	Columns []results.MatrixLine `yaml:"columns"`
	Cells   []results.MatrixCell `yaml:"cells"`
	lines   []int                // each cell's line in its file
	file    string               // where the matrix was read from
	_       struct{}             // disallow positional literals
}

//go:embed services.yaml
var servicesYAML []byte

// Services is the built-in matrix: Redis locks, Redlock and etcd under the
// same fault classes, the table of the README.
func Services() (Matrix, error) { return ParseMatrix("services.yaml", servicesYAML) }

// LoadMatrix reads and validates a matrix file.
func LoadMatrix(path string) (Matrix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Matrix{}, err
	}
	return ParseMatrix(path, b)
}

// ParseMatrix decodes and validates a matrix; name is the file it came
// from, for errors given as "name:line: ...".
func ParseMatrix(name string, b []byte) (Matrix, error) {
	var m Matrix
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return Matrix{}, fmt.Errorf("%w: %s: %v", scenario.ErrBadScenario, name, err)
	}
	var doc yaml.Node
	_ = yaml.Unmarshal(b, &doc) // it decoded above
	m.lines, m.file = cellLines(&doc), name
	return m, m.validate()
}

// cellLines returns the line of each entry under the document's "cells".
func cellLines(doc *yaml.Node) []int {
	if len(doc.Content) == 0 {
		return nil
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "cells" {
			var lines []int
			for _, c := range top.Content[i+1].Content {
				lines = append(lines, c.Line)
			}
			return lines
		}
	}
	return nil
}

// validate checks that rows and columns are named once, and that every
// cell sits in a declared row and column, once, and either names a
// scenario (and arm) of the catalogue or says why it is empty.
func (m Matrix) validate() error {
	if len(m.Rows) == 0 || len(m.Columns) == 0 {
		return fmt.Errorf("%w: %s: a matrix needs rows and columns", scenario.ErrBadScenario, m.file)
	}
	if err := uniqueNames("row", m.Rows); err != nil {
		return fmt.Errorf("%w: %s: %v", scenario.ErrBadScenario, m.file, err)
	}
	if err := uniqueNames("column", m.Columns); err != nil {
		return fmt.Errorf("%w: %s: %v", scenario.ErrBadScenario, m.file, err)
	}
	seen := make(map[[2]string]bool)
	for i, c := range m.Cells {
		err := m.checkCell(c, seen)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: %v", scenario.ErrBadScenario, m.file, m.line(i), err)
		}
	}
	return nil
}

func (m Matrix) line(i int) int {
	if i < len(m.lines) {
		return m.lines[i]
	}
	return 0
}

func uniqueNames(what string, ls []results.MatrixLine) error {
	seen := make(map[string]bool)
	for _, l := range ls {
		switch {
		case l.Name == "":
			return fmt.Errorf("a %s needs a name", what)
		case seen[l.Name]:
			return fmt.Errorf("%s %q is declared twice", what, l.Name)
		}
		seen[l.Name] = true
	}
	return nil
}

// checkCell checks one cell; seen holds the cells checked before it.
func (m Matrix) checkCell(c results.MatrixCell, seen map[[2]string]bool) error {
	if !slices.ContainsFunc(m.Rows, func(l results.MatrixLine) bool { return l.Name == c.Row }) {
		return fmt.Errorf("cell in row %q, which the matrix does not declare", c.Row)
	}
	if !slices.ContainsFunc(m.Columns, func(l results.MatrixLine) bool { return l.Name == c.Column }) {
		return fmt.Errorf("cell in column %q, which the matrix does not declare", c.Column)
	}
	k := [2]string{c.Row, c.Column}
	if seen[k] {
		return fmt.Errorf("a second cell for row %s, column %s", c.Row, c.Column)
	}
	seen[k] = true
	switch {
	case c.Scenario == "" && c.Why == "":
		return fmt.Errorf("cell %s × %s names no scenario and says no why", c.Row, c.Column)
	case c.Scenario != "" && c.Why != "":
		return fmt.Errorf("cell %s × %s names a scenario and says why it is empty", c.Row, c.Column)
	case c.Scenario == "":
		return nil
	}
	_, err := m.cellScenario(c)
	return err
}

// cellScenario is the scenario a cell plays: its arm, if it names one,
// with its row's lock program, if the row has one, in place of its lock.
func (m Matrix) cellScenario(c results.MatrixCell) (scenario.Scenario, error) {
	s, err := scenario.Lookup(c.Scenario)
	if err == nil && c.Arm != "" {
		s, err = s.Arm(c.Arm)
	}
	row, _ := m.row(c.Row)
	if err != nil || len(row.Program) == 0 {
		return s, err
	}
	return s.WithProgram(scenario.Program{Command: row.Program, Shape: row.Shape, Caps: row.Caps})
}

// row returns the row named name.
func (m Matrix) row(name string) (results.MatrixLine, bool) {
	i := slices.IndexFunc(m.Rows, func(l results.MatrixLine) bool { return l.Name == name })
	if i < 0 {
		return results.MatrixLine{}, false
	}
	return m.Rows[i], true
}

// WithoutMissingPrograms gives each row's lock program its absolute path
// (isolated clients are started elsewhere), and empties the cells of each
// row whose program is not found from here (its path from the current
// folder, or a command on the PATH), saying so in each cell's why; it
// returns one note per such row: the built-in matrix's Curator row runs
// from lockpick's repository.
func (m Matrix) WithoutMissingPrograms() (Matrix, []string) {
	var notes []string
	m.Rows, m.Cells = slices.Clone(m.Rows), slices.Clone(m.Cells)
	for i, r := range m.Rows {
		if len(r.Program) == 0 {
			continue
		}
		if path, err := scenario.ProgramPath(r.Program[0]); err == nil {
			m.Rows[i].Program = append([]string{path}, r.Program[1:]...)
			continue
		}
		why := fmt.Sprintf("its lock program %s is not found from here (a path is taken from the folder lockpick runs in)", r.Program[0])
		for i, c := range m.Cells {
			if c.Row == r.Name && c.Scenario != "" {
				m.Cells[i] = results.MatrixCell{Row: c.Row, Column: c.Column, Why: why}
			}
		}
		notes = append(notes, fmt.Sprintf("row %s not run: %s", r.Name, why))
	}
	return m, notes
}

// ErrUnknownLine means a row or column named is not in the matrix; the
// error wrapping it names the ones that are.
var ErrUnknownLine = errors.New("campaign: no such row or column")

// unknownLine is an [ErrUnknownLine] that says msg.
type unknownLine string

func (e unknownLine) Error() string        { return string(e) }
func (e unknownLine) Is(target error) bool { return target == ErrUnknownLine }

// Select keeps the rows and columns named (all when a list is empty) and
// the cells in them.
func (m Matrix) Select(rows, columns []string) (Matrix, error) {
	var err error
	if m.Rows, err = pickLines("row", m.Rows, rows); err != nil {
		return Matrix{}, err
	}
	if m.Columns, err = pickLines("column", m.Columns, columns); err != nil {
		return Matrix{}, err
	}
	var cells []results.MatrixCell
	var lines []int
	for i, c := range m.Cells {
		if (len(rows) == 0 || slices.Contains(rows, c.Row)) && (len(columns) == 0 || slices.Contains(columns, c.Column)) {
			cells, lines = append(cells, c), append(lines, m.line(i))
		}
	}
	m.Cells, m.lines = cells, lines
	return m, nil
}

func pickLines(what string, ls []results.MatrixLine, names []string) ([]results.MatrixLine, error) {
	if len(names) == 0 {
		return ls, nil
	}
	var out []results.MatrixLine
	for _, n := range names {
		i := slices.IndexFunc(ls, func(l results.MatrixLine) bool { return l.Name == n })
		if i < 0 {
			return nil, unknownLine(fmt.Sprintf("no %s %q in the matrix%s; its %ss: %s (lockpick matrix --list)",
				what, n, lineHint(n, ls), what, strings.Join(lineNames(ls), ", ")))
		}
		out = append(out, ls[i])
	}
	return out, nil
}

// lineNames returns the names of ls, in order.
func lineNames(ls []results.MatrixLine) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

// lineHint suggests the line a user meant by n: the nearest name, else
// the one whose label contains n ("failover" for "failover / leader loss").
func lineHint(n string, ls []results.MatrixLine) string {
	if h := suggest.Hint(n, lineNames(ls)); h != "" {
		return h
	}
	for _, l := range ls {
		if n != "" && strings.Contains(strings.ToLower(l.Label), strings.ToLower(n)) {
			return fmt.Sprintf(" (did you mean %q, %q?)", l.Name, l.Label)
		}
	}
	return ""
}

// Scenarios returns the scenario (or arm) of every cell that names one.
func (m Matrix) Scenarios() ([]scenario.Scenario, error) {
	var out []scenario.Scenario
	for _, c := range m.Cells {
		if c.Scenario == "" {
			continue
		}
		s, err := m.cellScenario(c)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Runs is the number of cells that name a scenario.
func (m Matrix) Runs() int {
	n := 0
	for _, c := range m.Cells {
		if c.Scenario != "" {
			n++
		}
	}
	return n
}

// RunMatrix runs every cell of m that names a scenario for opt.Trials
// trials and writes one run folder: a folder per cell (row.column),
// matrix.json and matrix.md. It returns the result and the folder's path.
// versions name the servers, for the table's legend.
func RunMatrix(ctx context.Context, m Matrix, opt *trial.Options, versions ...string) (*results.Matrix, string, error) {
	o := opt.WithDefaults()
	name := o.Name
	if name == "" {
		name = trial.FolderName("matrix-", "services", o.Seed, "")
	}
	dir, err := results.Create(o.Out, name)
	if err != nil {
		return nil, "", &trial.InfraError{Err: err}
	}
	began := time.Now()
	r := &results.Matrix{Title: m.Title, Trials: o.Trials, Seed: o.Seed, Rows: m.Rows, Columns: m.Columns,
		Date: began.UTC().Format("2006-01-02"), Versions: versions}
	done, total := 0, m.Runs()*o.Trials
	for _, c := range m.Cells {
		if c.Scenario != "" {
			if err := m.runCell(ctx, &c, o, dir, done, total); err != nil {
				dir.Abort()
				return nil, "", err
			}
			done += o.Trials
		}
		r.Cells = append(r.Cells, c)
	}
	r.WallSeconds = time.Since(began).Seconds()
	final, err := commitRun(dir, func() error { return writeMatrix(dir, r) })
	if err != nil {
		return nil, "", err
	}
	return r, final, nil
}

// runCell plays cell c's scenario into its own folder of dir and records
// its rate; done of total trials ran before it.
func (m Matrix) runCell(ctx context.Context, c *results.MatrixCell, o trial.Options, dir *results.RunDir, done, total int) error {
	s, err := m.cellScenario(*c)
	if err != nil {
		return err
	}
	co := o
	co.Out, co.Name, co.Arm = dir.Path(""), c.Row+"."+c.Column, c.Arm
	if o.Progress != nil {
		co.Progress = func(d, _ int) { o.Progress(done+d, total) }
	}
	v, _, err := trial.Run(ctx, s, &co)
	if err != nil {
		return err
	}
	a := judge.Arm(c.Arm, s.Summary, v, co.Name)
	c.Result = &a
	return nil
}

func writeMatrix(dir *results.RunDir, r *results.Matrix) error {
	if err := dir.WriteJSON("matrix.json", r); err != nil {
		return err
	}
	return os.WriteFile(dir.Path("matrix.md"), []byte(r.Markdown()), 0o644)
}
