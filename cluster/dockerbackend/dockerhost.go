package dockerbackend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"

	"github.com/moby/moby/client"
)

// newClient returns a client of the engine that DOCKER_HOST names (with
// the DOCKER_TLS_VERIFY, DOCKER_CERT_PATH and DOCKER_API_VERSION that go
// with it), or else the docker CLI's current context, or else the first
// socket of /var/run/docker.sock and a rootless engine's sockets that
// exists. It does not contact the engine.
func newClient() (*client.Client, error) {
	opts := []client.Opt{client.FromEnv}
	if os.Getenv("DOCKER_HOST") == "" {
		if host := contextHost(); host != "" {
			opts = append(opts, client.WithHost(host))
		} else if sock := localSocket(); sock != "" {
			opts = append(opts, client.WithHost("unix://"+sock))
		}
	}
	return client.New(opts...)
}

// contextHost returns the engine address of the docker CLI's current
// context (DOCKER_CONTEXT, or currentContext in config.json), or "" for
// the default context or when there is none.
func contextHost() string {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".docker")
	}
	name := os.Getenv("DOCKER_CONTEXT")
	if name == "" {
		var conf struct {
			CurrentContext string `json:"currentContext"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
			_ = json.Unmarshal(b, &conf)
		}
		name = conf.CurrentContext
	}
	if name == "" || name == "default" {
		return ""
	}
	sum := sha256.Sum256([]byte(name))
	b, err := os.ReadFile(filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"))
	if err != nil {
		return ""
	}
	var meta struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if json.Unmarshal(b, &meta) != nil {
		return ""
	}
	return meta.Endpoints["docker"].Host
}

// localSocket returns the path of the engine's socket when the default
// one is missing and a rootless engine's is there, and "" otherwise.
func localSocket() string {
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		return ""
	}
	var socks []string
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		socks = append(socks, filepath.Join(dir, "docker.sock"))
	}
	socks = append(socks, "/run/user/"+strconv.Itoa(os.Getuid())+"/docker.sock")
	if home, err := os.UserHomeDir(); err == nil {
		socks = append(socks, filepath.Join(home, ".docker", "run", "docker.sock"))
	}
	for _, s := range socks {
		if fi, err := os.Stat(s); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return s
		}
	}
	return ""
}
