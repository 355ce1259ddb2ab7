package results

import (
	"fmt"
	"strings"
)

// A MatrixLine is a row (a lock service) or a column (a class of fault)
// of a matrix.
type MatrixLine struct {
	Name    string `json:"name" yaml:"name"`
	Label   string `json:"label" yaml:"label"`
	Summary string `json:"summary,omitempty" yaml:"summary"`
	// Program, on a row, is a lock program's command line that plays the
	// row's cells in place of each scenario's own lock, declaring Shape
	// and Caps as --subject-shape and --subject-caps do; a relative path
	// is taken from the folder lockpick runs in.
	Program []string `json:"program,omitempty" yaml:"program"`
	Shape   string   `json:"shape,omitempty" yaml:"shape"`
	Caps    []string `json:"caps,omitempty" yaml:"caps"`
}

// A MatrixCell is one lock service under one class of fault: the scenario
// (and arm) that plays it and its rate once run, or why it is empty.
type MatrixCell struct {
	Row      string     `json:"row" yaml:"row"`
	Column   string     `json:"column" yaml:"column"`
	Scenario string     `json:"scenario,omitempty" yaml:"scenario"`
	Arm      string     `json:"arm,omitempty" yaml:"arm"`
	Why      string     `json:"why,omitempty" yaml:"why"`
	Result   *ArmResult `json:"result,omitempty" yaml:"-"`
}

// Played is the cell's scenario as "scenario[arm]".
func (c MatrixCell) Played() string {
	if c.Arm == "" {
		return c.Scenario
	}
	return c.Scenario + "[" + c.Arm + "]"
}

// A Matrix is the outcome of `lockpick matrix`: violation rates of lock
// services (rows) under classes of fault (columns).
type Matrix struct {
	Title       string       `json:"title"`
	Date        string       `json:"date"`
	Trials      int          `json:"trials"`
	Seed        uint64       `json:"seed"`
	Rows        []MatrixLine `json:"rows"`
	Columns     []MatrixLine `json:"columns"`
	Cells       []MatrixCell `json:"cells"`
	WallSeconds float64      `json:"wall_seconds"`
	// Versions names the servers the cells ran on, e.g. "redis-server 7.0.15".
	Versions []string `json:"versions,omitempty"`
}

// Unmatched lists the cells whose scenario did not match its own
// expectation, as "row × column: scenario[arm] (expect X, observed Y)".
func (m *Matrix) Unmatched() []string {
	var out []string
	for _, c := range m.Cells {
		if r := c.Result; r != nil && !r.Matched {
			out = append(out, fmt.Sprintf("%s × %s: %s (expect %s, observed %s)", c.Row, c.Column, c.Played(), r.Expect, r.Observed))
		}
	}
	return out
}

// Markdown renders the matrix as a table with its legend, the scenario of
// every cell and the reason of every empty one.
func (m *Matrix) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| lock service |")
	for _, col := range m.Columns {
		fmt.Fprintf(&b, " %s |", col.Label)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(m.Columns)) + "\n")
	var whys []string
	for _, row := range m.Rows {
		fmt.Fprintf(&b, "| %s |", row.Label)
		for _, col := range m.Columns {
			fmt.Fprintf(&b, " %s |", m.cellText(row.Name, col.Name, &whys))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + m.legend() + "\n")
	for i, w := range whys {
		fmt.Fprintf(&b, "\n%d. %s", i+1, w)
	}
	if len(whys) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("\nThe cells:\n\n")
	for _, c := range m.Cells {
		if c.Scenario != "" {
			fmt.Fprintf(&b, "- %s × %s: `%s`\n", label(m.Rows, c.Row), label(m.Columns, c.Column), c.Played())
		}
	}
	return b.String()
}

// cellText is the text of the cell at row, column; an empty cell's reason
// is appended to whys and referred to by its number.
func (m *Matrix) cellText(row, col string, whys *[]string) string {
	for _, c := range m.Cells {
		if c.Row != row || c.Column != col {
			continue
		}
		if c.Scenario == "" {
			*whys = append(*whys, c.Why)
			return fmt.Sprintf("— (%d)", len(*whys))
		}
		if c.Result == nil {
			return "not run"
		}
		return rateText(*c.Result)
	}
	return "·"
}

// rateText is e.g. "**20/20** 84–100%, +2.41s" or "0/20 0–16%".
func rateText(a ArmResult) string {
	if a.Conclusive == 0 {
		return fmt.Sprintf("no conclusive trial (%d inconclusive)", a.Inconclusive)
	}
	n := fmt.Sprintf("%d/%d", a.Violations, a.Conclusive)
	if a.Violations > 0 {
		n = "**" + n + "**"
	}
	t := fmt.Sprintf("%s %.0f–%.0f%%", n, 100*a.Low, 100*a.High)
	if a.FirstViolationMedian > 0 {
		t += fmt.Sprintf(", %s", a.FirstViolationText())
	}
	if a.Inconclusive > 0 {
		t += fmt.Sprintf(", %d inconclusive", a.Inconclusive)
	}
	if a.Contradicts {
		t += " (!)"
	}
	return t
}

func (m *Matrix) legend() string {
	l := fmt.Sprintf("Each cell: trials that violated mutual exclusion / conclusive trials, the 95%% Wilson interval of the rate, "+
		"and the median time from the trial's start to the first violation. %d trials a cell, seed %d, %s, %.0f min in all",
		m.Trials, m.Seed, m.Date, m.WallSeconds/60)
	if len(m.Versions) > 0 {
		l += ", " + strings.Join(m.Versions, ", ")
	}
	return l + ". A violation is a trial observed unsafe, stuck or starving; a fenced lock's late write that the resource refused is not one. " +
		"Inconclusive trials (the attack did not meet the lock) are left out. (!) marks a cell whose conclusive trials contradict its scenario's catalogued expectation; " +
		"· a pair with no scenario; — a pair that cannot be run here, for the reason below."
}

func label(ls []MatrixLine, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Label
		}
	}
	return name
}
