package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/lockpick/lockpick/scenario"
)

// TestDeploy_KubernetesManifests parses every manifest in deploy/kubernetes
// strictly as the Kubernetes types it declares (a misspelled field fails),
// and checks the lockpick command lines in them against lockpick's own
// flags, and that the Indexed Job's completions match its --shards.
func TestDeploy_KubernetesManifests(t *testing.T) {
	files, _ := filepath.Glob("../../deploy/kubernetes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifest in deploy/kubernetes")
	}
	jobs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := k8syaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s document %d: %v", f, i+1, err)
			}
			switch meta.APIVersion + " " + meta.Kind {
			case "batch/v1 Job":
				var job batchv1.Job
				if err := k8syaml.UnmarshalStrict(doc, &job); err != nil {
					t.Fatalf("%s: Job: %v", f, err)
				}
				jobs++
				checkJob(t, f, &job)
			case "v1 PersistentVolumeClaim":
				var pvc corev1.PersistentVolumeClaim
				if err := k8syaml.UnmarshalStrict(doc, &pvc); err != nil {
					t.Fatalf("%s: PersistentVolumeClaim: %v", f, err)
				}
			default:
				t.Errorf("%s document %d: unexpected %s %s", f, i+1, meta.APIVersion, meta.Kind)
			}
		}
	}
	if jobs < 2 {
		t.Errorf("found %d Jobs, want the shard Job and the merge Job", jobs)
	}
}

func checkJob(t *testing.T, file string, job *batchv1.Job) {
	t.Helper()
	spec := job.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q: a rerun shard would write a second folder", file, spec.RestartPolicy)
	}
	for _, c := range spec.Containers {
		cmd := checkCommandLine(t, file, c.Args)
		if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
			continue
		}
		shards, _ := cmd.Flags().GetInt("shards")
		if job.Spec.Completions == nil || int(*job.Spec.Completions) != shards {
			t.Errorf("%s: an Indexed Job of %d completions runs --shards %d", file, ptrValue(job.Spec.Completions), shards)
		}
	}
}

// TestDeploy_GitHubActionsWorkflow checks the workflow example: it is valid
// YAML, its lockpick command lines parse, and its matrix has one entry per
// shard.
func TestDeploy_GitHubActionsWorkflow(t *testing.T) {
	const file = "../../deploy/github-actions/lockpick-shards.yml"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix struct {
					Shard []int `yaml:"shard"`
				} `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	lines := 0
	shardOf := regexp.MustCompile(`--shard \$\{\{ matrix\.shard \}\}/(\d+)`)
	for name, job := range wf.Jobs {
		for _, st := range job.Steps {
			line, _, _ := strings.Cut(st.Run, " ||")
			if !strings.HasPrefix(line, "bin/lockpick ") {
				continue
			}
			lines++
			if m := shardOf.FindStringSubmatch(line); m != nil {
				if want, _ := strconv.Atoi(m[1]); len(job.Strategy.Matrix.Shard) != want {
					t.Errorf("job %s: a matrix of %d shards runs --shard i/%d", name, len(job.Strategy.Matrix.Shard), want)
				}
				line = shardOf.ReplaceAllString(line, "--shard 1/$1")
			}
			checkCommandLine(t, file, strings.Fields(line)[1:])
		}
	}
	if lines < 2 {
		t.Errorf("%s: found %d lockpick command lines, want the shard and the merge", file, lines)
	}
}

// checkCommandLine parses args as lockpick would, without running them, and
// looks up the scenario a run or compare names.
func checkCommandLine(t *testing.T, file string, args []string) *cobra.Command {
	t.Helper()
	cmd, rest, err := newRootCmd().Find(args)
	if err == nil {
		err = cmd.ParseFlags(rest)
	}
	if err == nil {
		err = cmd.ValidateArgs(cmd.Flags().Args())
	}
	if err != nil {
		t.Fatalf("%s: lockpick %s: %v", file, strings.Join(args, " "), err)
	}
	if n := cmd.Name(); (n == "run" || n == "compare") && len(cmd.Flags().Args()) > 0 {
		if _, err := scenario.Lookup(cmd.Flags().Arg(0)); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
	return cmd
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
