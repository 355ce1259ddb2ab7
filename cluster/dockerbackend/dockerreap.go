package dockerbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Containers are labelled with their owner, so that lockpick can remove
// them itself, with no reaper container (whose image could not be pulled
// without a registry):
//
//   - [cluster.Cluster.Close] and [Backend.Close] remove a backend's containers;
//   - [cluster.KillAll] (and so [cluster.ReapOnSignal], and `lockpick run` on Ctrl-C) removes
//     every container this process started and has not removed yet;
//   - a process that died without either (kill -9) leaves containers whose
//     owner pid is gone: the next docker backend on the host removes them
//     (see [RemoveOrphanContainers]).
const (
	labelBackend  = "lockpick.backend"   // "docker": every lockpick container
	labelRun      = "lockpick.run"       // the Backend's random id
	labelNode     = "lockpick.node"      // the node's name
	labelHost     = "lockpick.host"      // the owner's hostname
	labelPID      = "lockpick.pid"       // the owner's pid
	labelPIDStart = "lockpick.pid-start" // the owner's start time, against pid reuse
)

var (
	// ErrNoDocker means no Docker engine answers (see [Available]).
	ErrNoDocker = errors.New("dockerbackend: no docker engine answers")
)

// dockerTimeout bounds cleanup calls that have no context of their own.
const dockerTimeout = 30 * time.Second

var docker = struct {
	mu      sync.Mutex
	api     *client.Client
	orphans sync.Once
	live    map[string]struct{} // ids of containers not yet removed
}{live: map[string]struct{}{}}

// engine returns the process's client of the Docker engine, creating it
// on first use (see [newClient]), once the engine has answered a ping.
func engine(ctx context.Context) (*client.Client, error) {
	docker.mu.Lock()
	defer docker.mu.Unlock()
	if docker.api == nil {
		api, err := newClient()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
		}
		docker.api = api
	}
	if _, err := docker.api.Ping(ctx, client.PingOptions{}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	return docker.api, nil
}

// Available returns nil when a Docker engine answers, and an error
// wrapping [ErrNoDocker] that says why not otherwise.
func Available(ctx context.Context) error {
	_, err := engine(ctx)
	return err
}

func trackContainer(id string) {
	docker.mu.Lock()
	docker.live[id] = struct{}{}
	docker.mu.Unlock()
}

func untrackContainer(id string) {
	docker.mu.Lock()
	delete(docker.live, id)
	docker.mu.Unlock()
}

// removeContainer force-removes the container (killing it if it runs) and
// stops tracking it. A container that is already gone is not an error.
func removeContainer(ctx context.Context, api client.APIClient, id string) error {
	_, err := api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("cluster: remove container %.12s: %w", id, err)
	}
	untrackContainer(id)
	return nil
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// removeAllContainers removes every container this process started and
// has not removed yet; [cluster.KillAll] calls it.
func removeAllContainers() {
	docker.mu.Lock()
	api := docker.api
	ids := make([]string, 0, len(docker.live))
	for id := range docker.live {
		ids = append(ids, id)
	}
	docker.mu.Unlock()
	if api == nil || len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { _ = removeContainer(ctx, api, id) })
	}
	wg.Wait()
}

// ownerLabels returns the labels naming this process as a container's owner.
func ownerLabels() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{
		labelBackend:  "docker",
		labelHost:     host,
		labelPID:      strconv.Itoa(os.Getpid()),
		labelPIDStart: pidStart(os.Getpid()),
	}
}

// pidStart returns the start time of process pid in clock ticks since boot
// (field 22 of /proc/<pid>/stat), or "" when pid does not exist.
func pidStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// RemoveOrphanContainers removes the containers of lockpick runs on this
// host whose process is gone (killed with SIGKILL, so it could not clean up)
// and returns how many it removed. Containers of live lockpick processes and
// of other hosts are left alone. The docker backend calls it once per
// process before its first container starts.
func RemoveOrphanContainers(ctx context.Context) (int, error) {
	api, err := engine(ctx)
	if err != nil {
		return 0, err
	}
	host, _ := os.Hostname()
	list, err := api.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", labelBackend+"=docker", labelHost+"="+host)})
	if err != nil {
		return 0, fmt.Errorf("cluster: list containers: %w", err)
	}
	n := 0
	var errs []error
	for _, c := range list.Items {
		pid, err := strconv.Atoi(c.Labels[labelPID])
		if err != nil || (pid > 0 && pidStart(pid) == c.Labels[labelPIDStart]) {
			continue // unlabelled, or its owner still runs
		}
		if err := removeContainer(ctx, api, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func init() { cluster.OnReap(removeAllContainers) }
