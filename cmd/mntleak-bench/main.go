package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/mntleak/mntleak/bench"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == bench.StormWorkerCommand {
		if err := bench.StormWorker(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "mntleak-bench %s: %v\n", bench.StormWorkerCommand, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "soak" {
		os.Exit(runSoak(os.Args[2:]))
	}
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("mntleak-bench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "the reduced run for CI (under 2 minutes)")
	mntleak := fs.String("mntleak", "bin/mntleak", "the mntleak binary to measure")
	md := fs.String("markdown", "", "also write the results as Markdown to this file")
	workDir := fs.String("work-dir", "", "scratch directory, kept with its logs (default: a temp dir, removed)")
	skip := fs.String("skip", "", "sections not to run, comma-separated: "+strings.Join(bench.Sections(), ","))
	noBpftrace := fs.Bool("no-bpftrace", false, "leave bpftrace out of the comparison")
	stormTime := fs.Duration("storm-time", 0, "length of each mount storm (default: 60s, 10s with -quick)")
	stormSizes := fs.String("storm-ringbuf-sizes", "", "ring buffer sizes in bytes, comma-separated, to run the mount storm again with (one storm each, after the default's)")
	stormPremounts := fs.String("storm-premounts", "", "numbers of mounts, comma-separated, to run the mount storm again among (binds made in its namespace first; one storm each)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	cfg := bench.Full()
	if *quick {
		cfg = bench.Quick()
	}
	cfg.Mntleak, cfg.MarkdownOut, cfg.WorkDir, cfg.NoBpftrace = *mntleak, *md, *workDir, *noBpftrace
	cfg.CommandLine = strings.Join(os.Args, " ")
	if *stormTime > 0 {
		cfg.StormTime = *stormTime
	}
	for _, s := range strings.Split(*stormSizes, ",") {
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 4096 || n&(n-1) != 0 {
			fmt.Fprintf(os.Stderr, "mntleak-bench: invalid -storm-ringbuf-sizes entry %q: want a power of two of at least 4096\n", s)
			return 2
		}
		cfg.StormRingBufSizes = append(cfg.StormRingBufSizes, n)
	}
	for _, s := range strings.Split(*stormPremounts, ",") {
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 50000 {
			fmt.Fprintf(os.Stderr, "mntleak-bench: invalid -storm-premounts entry %q: want a number of mounts from 1 to 50000 (fs.mount-max is 100000 a namespace)\n", s)
			return 2
		}
		cfg.StormPremounts = append(cfg.StormPremounts, n)
	}
	cfg.Skip = map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		if s != "" && !slices.Contains(bench.Sections(), s) {
			fmt.Fprintf(os.Stderr, "mntleak-bench: invalid -skip entry %q: want one of %s\n", s, strings.Join(bench.Sections(), ","))
			return 2
		}
		if s != "" {
			cfg.Skip[s] = true
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mntleak-bench: %v\n", err)
		return 1
	}
	for _, f := range failed {
		fmt.Fprintf(os.Stderr, "mntleak-bench: %s\n", f)
	}
	if len(failed) > 0 {
		return 1
	}
	return 0
}
