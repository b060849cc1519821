package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mntleak/mntleak/bench"
)

// runSoak is `mntleak-bench soak`: one daemon under storms, container
// churn and injected failures for a set time, then the checks.
func runSoak(args []string) int {
	fs := flag.NewFlagSet("mntleak-bench soak", flag.ContinueOnError)
	duration := fs.Duration("duration", 10*time.Minute, "how long to soak")
	mntleak := fs.String("mntleak", "bin/mntleak", "the mntleak binary")
	md := fs.String("markdown", "", "replace the \"## Soak\" section of this Markdown file with the results")
	workDir := fs.String("work-dir", "", "scratch directory, kept with its logs (default: a temp dir, removed)")
	noDocker := fs.Bool("no-docker", false, "leave container churn out")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "mntleak-bench soak: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *duration < 30*time.Second {
		fmt.Fprintf(os.Stderr, "mntleak-bench soak: -duration %s: want at least 30s\n", *duration)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "mntleak-bench soak: needs root (BPF, mount namespaces, docker)")
		return 1
	}
	if _, err := os.Stat(*mntleak); err != nil {
		fmt.Fprintf(os.Stderr, "mntleak-bench soak: mntleak binary: %v (make build)\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := bench.DefaultSoak(*duration)
	if *noDocker {
		cfg.Containers = 0
	}
	r, err := bench.NewRunner(bench.Config{Mntleak: *mntleak, WorkDir: *workDir, StormThreads: cfg.StormThreads})
	if err != nil {
		fmt.Fprintf(os.Stderr, "mntleak-bench soak: %v\n", err)
		return 1
	}
	defer r.Close()
	cmdline := strings.Join(os.Args, " ")
	machine := bench.DescribeMachine(ctx)
	fmt.Printf("mntleak-bench soak: %s\nmachine: %s\n", cmdline, machine.Line())
	res, err := r.Soak(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mntleak-bench soak: %v\n", err)
		return 1
	}
	fmt.Print(res.Text())
	if *md != "" {
		if err := bench.WriteSoakSection(*md, res.Markdown(machine, cmdline)); err != nil {
			fmt.Fprintf(os.Stderr, "mntleak-bench soak: write %s: %v\n", *md, err)
			return 1
		}
	}
	if ok, _ := res.Pass(); !ok {
		return 1
	}
	return 0
}
