package cluster

import (
	"bytes"
	"fmt"
	"os"
)

// Markers of a Redis 7 log: every start logs serverInitialized, and a start
// that read an RDB or AOF file of its own then logs dbLoadedFrom ("DB loaded
// from disk", "… from append only file").
var (
	serverInitialized = []byte("Server initialized")
	dbLoadedFrom      = []byte("DB loaded from")
)

// LoadedFromDisk reads the Redis log at logPath and reports whether the
// node's last start loaded data from its own files, with the log line that
// says so. It returns an error if the log holds no start at all.
func LoadedFromDisk(logPath string) (loaded bool, line string, err error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return false, "", err
	}
	i := bytes.LastIndex(b, serverInitialized)
	if i < 0 {
		return false, "", fmt.Errorf("cluster: %s logs no start (%q)", logPath, serverInitialized)
	}
	rest := b[i:]
	j := bytes.Index(rest, dbLoadedFrom)
	if j < 0 {
		return false, "", nil
	}
	end := bytes.IndexByte(rest[j:], '\n')
	if end < 0 {
		end = len(rest) - j
	}
	return true, string(rest[j : j+end]), nil
}
