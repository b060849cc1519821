package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
)

// auditParallel bounds the nodes asked at once.
const auditParallel = 4

// nodeAnswer is one node's block.
type nodeAnswer struct {
	node     string
	pod      string // namespace/name of the mntleak pod asked; "" for none
	out, err bytes.Buffer
	code     int
	problem  error
}

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer, fake *backend) int {
	var c common
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	c.register(fs)
	node := fs.String("node", "", "the node to audit")
	all := fs.Bool("all-nodes", false, "audit every node (one block per node)")
	parallel := fs.Int("parallel", auditParallel, "nodes asked at once")
	prefix := fs.String("path-prefix", "", "only mounts below this path")
	pos, code, done := parse(fs, args, stderr)
	if done {
		return code
	}
	switch {
	case len(pos) > 0:
		return fail(stderr, "audit", exitUsage, fmt.Errorf("unexpected argument %q", pos[0]))
	case (*node == "") == !*all:
		return fail(stderr, "audit", exitUsage, errors.New("want --node NODE or --all-nodes"))
	case *parallel < 1:
		return fail(stderr, "audit", exitUsage, fmt.Errorf("--parallel %d: want at least 1", *parallel))
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cl, r, _, err := c.connect(fake)
	if err != nil {
		return fail(stderr, "audit", exitCluster, err)
	}
	nodes := []string{*node}
	if *all {
		if nodes, err = cl.nodes(ctx); err != nil {
			return fail(stderr, "audit", exitCluster, err)
		}
	}
	daemons, err := cl.daemonPods(ctx, *node)
	if err != nil {
		return fail(stderr, "audit", exitCluster, err)
	}
	answers := make([]*nodeAnswer, len(nodes))
	sem := make(chan struct{}, *parallel)
	var wg sync.WaitGroup
	for i, n := range nodes {
		a := &nodeAnswer{node: n}
		answers[i] = a
		p, ok := daemons[n]
		if !ok {
			continue
		}
		a.pod = p.Namespace + "/" + p.Name
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if a.problem = cl.mayExec(ctx, p); a.problem != nil {
				return
			}
			cmd := []string{daemonBinary, "audit"}
			if *prefix != "" {
				cmd = append(cmd, "--path-prefix", *prefix)
			}
			a.code, a.problem = r.run(ctx, p, cmd, &a.out, &a.err)
		}()
	}
	wg.Wait()
	return printAudit(stdout, answers)
}

// printAudit prints one block per node, in the nodes' order, and returns
// the worst exit: a leak (1) over a node not asked (4) over blind (3).
func printAudit(w io.Writer, answers []*nodeAnswer) int {
	worst := exitOK
	rank := map[int]int{exitOK: 0, 3: 1, exitCluster: 2, 1: 3}
	note := func(c int) {
		if rank[c] > rank[worst] {
			worst = c
		}
	}
	for i, a := range answers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		switch {
		case a.pod == "":
			fmt.Fprintf(w, "node %s: no mntleak pod on this node: not audited\n", a.node)
			note(exitCluster)
		case a.problem != nil:
			fmt.Fprintf(w, "node %s (%s): not audited: %v\n", a.node, a.pod, a.problem)
			note(exitCluster)
		default:
			fmt.Fprintf(w, "node %s (%s):\n", a.node, a.pod)
			for _, b := range [][]byte{a.err.Bytes(), a.out.Bytes()} {
				for _, line := range bytes.SplitAfter(b, []byte("\n")) {
					if len(line) > 0 {
						fmt.Fprintf(w, "  %s", line)
						if line[len(line)-1] != '\n' {
							fmt.Fprintln(w)
						}
					}
				}
			}
			note(a.code)
		}
	}
	return worst
}
