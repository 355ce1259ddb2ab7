package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/trial"
)

func newImageCmd() *cobra.Command {
	var lockpickBin, tag string
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build a container image of lockpick itself, to run shards on Kubernetes or CI runners",
		Long: `Image builds a FROM scratch image from files on this host, with no registry:
this lockpick binary, redis-server and redis-sentinel (and etcd, when it is
on PATH, for the etcd scenarios) with their shared libraries, and the clock
shim (built with gcc when it is there). Its
entrypoint is lockpick, which runs the nodes inside the container with the
process backend; results go to /work/results, so mount a folder there.
The image is named lockpick:<hash of its content> and tagged --tag.

A statically linked lockpick keeps the image small and free of host
libraries: CGO_ENABLED=0 go build -o bin/lockpick ./cmd/lockpick (make image
does this). Push it to your registry for a cluster, or use it locally:

  docker run --rm -v $PWD/results:/work/results -e JOB_COMPLETION_INDEX=0 \
    lockpick:latest run redlock-crash-restart --trials 100 --shards 4

See deploy/kubernetes/ for an Indexed Job that runs the shards.`,
		Example: "  lockpick image\n  lockpick image --tag registry.example.com/lockpick:v1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return buildImage(cmd, cmd.OutOrStdout(), lockpickBin, tag)
		},
	}
	cmd.Flags().StringVar(&lockpickBin, "lockpick", "", "the lockpick binary to put in the image (default: this one)")
	cmd.Flags().StringVar(&tag, "tag", "lockpick:latest", "also name the image this (empty: only the content hash)")
	return cmd
}

func buildImage(cmd *cobra.Command, out io.Writer, lockpickBin, tag string) error {
	ctx := cmd.Context()
	o := dockerbackend.RunnerImageOptions{Lockpick: lockpickBin}
	shim, err := cluster.BuildClockShim(trial.ShimCache())
	switch {
	case errors.Is(err, cluster.ErrNoCompiler):
		fmt.Fprintln(cmd.ErrOrStderr(), "lockpick: no gcc: the image has no clock shim, so scenarios that move a clock will not run in it")
	case err != nil:
		return infraError(err)
	default:
		o.ClockShim = shim
	}
	ref, err := dockerbackend.BuildRunnerImage(ctx, &o)
	switch {
	case errors.Is(err, cluster.ErrBinaryNotFound):
		return usageError("image: " + err.Error())
	case err != nil:
		return infraError(err)
	}
	if tag != "" {
		if err := dockerbackend.TagImage(ctx, ref, tag); err != nil {
			return infraError(err)
		}
	}
	fmt.Fprintln(out, ref)
	if tag != "" {
		fmt.Fprintln(out, tag)
	}
	return nil
}
