package trial

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/results"
)

// FolderName names a run folder: <time>-<kind><scenario>-seed<seed><suffix>,
// kind "" for a run and "compare-" for a comparison.
func FolderName(kind, scenario string, seed uint64, suffix string) string {
	return fmt.Sprintf("%s-%s%s-seed%d%s", time.Now().Format("20060102-150405"), kind, scenario, seed, suffix)
}

// CreateFolder creates the folder name under out, or name-2, name-3, ...
// when runs of one scenario and seed come within one second.
func CreateFolder(out, name string) (*results.RunDir, error) {
	dir, err := results.Create(out, name)
	for i := 2; errors.Is(err, results.ErrExists) && i < 100; i++ {
		dir, err = results.Create(out, fmt.Sprintf("%s-%d", name, i))
	}
	return dir, err
}
