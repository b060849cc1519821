package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/mntleak/mntleak/internal/podref"
)

// target is the pod a why or release is about, and the mntleak pod on its
// node.
type target struct {
	ref     podref.Ref
	uid     string
	node    string
	daemon  corev1.Pod
	cluster cluster
	runner  runner
}

// targetFlags are why's and release's own flags.
type targetFlags struct {
	common
	uid, node string
}

func (f *targetFlags) register(fs *flag.FlagSet) {
	f.common.register(fs)
	fs.StringVar(&f.uid, "pod-uid", "", "the pod's UID, for a pod gone from the API server (with --node)")
	fs.StringVar(&f.node, "node", "", "the pod's node, with --pod-uid")
}

// resolve reads the pod argument, finds the pod, its node and the mntleak
// pod there. The error is the command's one line; code its exit.
func (f *targetFlags) resolve(ctx context.Context, cmd string, pos []string, fake *backend) (target, int, error) {
	var t target
	switch {
	case len(pos) > 1:
		return t, exitUsage, fmt.Errorf("want one pod/NAME, got %d arguments", len(pos))
	case len(pos) == 0 && f.uid == "":
		return t, exitUsage, errors.New("want pod/NAME (or --pod-uid UID --node NODE)")
	case f.uid != "" && f.node == "":
		return t, exitUsage, errors.New("--pod-uid needs --node (the node the pod ran on)")
	case f.uid != "" && podref.CheckUID(f.uid) != nil:
		return t, exitUsage, fmt.Errorf("--pod-uid %w", podref.CheckUID(f.uid))
	}
	c, r, ns, err := f.connect(fake)
	if err != nil {
		return t, exitCluster, err
	}
	t.cluster, t.runner, t.uid, t.node = c, r, f.uid, f.node
	if len(pos) == 1 {
		if t.ref, err = podref.ParsePod(pos[0], ns); err != nil {
			return t, exitUsage, err
		}
	}
	if t.uid == "" {
		p, err := c.pod(ctx, t.ref)
		if err != nil {
			return t, exitCluster, err
		}
		t.uid, t.node = string(p.UID), p.Spec.NodeName
		if t.node == "" {
			return t, exitCluster, fmt.Errorf("pod %s is on no node (not scheduled): nothing of it is mounted anywhere", t.ref)
		}
	}
	if t.daemon, err = c.daemonPod(ctx, t.node); err != nil {
		return t, exitCluster, err
	}
	if err := c.mayExec(ctx, t.daemon); err != nil {
		return t, exitCluster, err
	}
	return t, 0, nil
}

// whyPodCommand is `mntleak why pod` as the mntleak pod runs it.
func (t target) whyPodCommand(extra ...string) []string {
	cmd := []string{daemonBinary, "why", "pod", "--pod-uid", t.uid, "--node-name", t.node}
	cmd = append(cmd, daemonFlags(t.daemon)...)
	cmd = append(cmd, extra...)
	if t.ref.Name != "" {
		cmd = append(cmd, t.ref.String())
	}
	return cmd
}

func runWhy(ctx context.Context, args []string, stdout, stderr io.Writer, fake *backend) int {
	var f targetFlags
	fs := flag.NewFlagSet("why", flag.ContinueOnError)
	f.register(fs)
	var out outputFormat
	out.register(fs, "the node's answer: human (its objects, then each held one's finding as a headline and detail lines) or json (mntleak why pod --json)")
	pos, code, done := parse(fs, args, stderr)
	if done {
		return code
	}
	asJSON, err := out.asJSON()
	if err != nil {
		return fail(stderr, "why", exitUsage, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	t, code, err := f.resolve(ctx, "why", pos, fake)
	if err != nil {
		return fail(stderr, "why", code, err)
	}
	var extra []string
	if asJSON {
		extra = append(extra, "--json")
	}
	fmt.Fprintf(stderr, "kubectl mntleak why: node %s, asking %s/%s\n", t.node, t.daemon.Namespace, t.daemon.Name)
	code, err = t.runner.run(ctx, t.daemon, t.whyPodCommand(extra...), stdout, stderr)
	if err != nil {
		return fail(stderr, "why", exitCluster, err)
	}
	return code
}
