package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrExists means a run folder of that name already exists.
var ErrExists = errors.New("results: run folder exists")

// A RunDir is a run folder being written. Files go to a ".partial" folder
// that [RunDir.Commit] renames into place.
type RunDir struct {
	final, tmp string
}

// Create starts a run folder named name under root.
func Create(root, name string) (*RunDir, error) {
	final := filepath.Join(root, name)
	if _, err := os.Stat(final); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, final)
	}
	tmp := final + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &RunDir{final: final, tmp: tmp}, nil
}

// Path returns where rel lives while the run is being written.
func (r *RunDir) Path(rel string) string { return filepath.Join(r.tmp, rel) }

// Final returns the folder's path once committed.
func (r *RunDir) Final() string { return r.final }

// WriteJSON writes v as indented JSON to rel.
func (r *RunDir) WriteJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	path := r.Path(rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Commit renames the folder into place and returns its final path.
func (r *RunDir) Commit() (string, error) {
	if err := os.Rename(r.tmp, r.final); err != nil {
		return "", fmt.Errorf("results: commit %s: %w", r.final, err)
	}
	return r.final, nil
}

// Abort removes everything written so far. It is idempotent.
func (r *RunDir) Abort() { _ = os.RemoveAll(r.tmp) }

// Existing opens a committed run folder for rewriting files in place.
func Existing(dir string) *RunDir { return &RunDir{final: dir, tmp: dir} }
