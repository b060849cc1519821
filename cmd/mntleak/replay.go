package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/enrich"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/sink/output"
	"github.com/mntleak/mntleak/stream"
)

type replayOptions struct {
	format output.Format
	file   string
}

func parseReplayFlags(args []string, stdoutTTY bool, stderr io.Writer) (replayOptions, error) {
	var opts replayOptions
	fs := flag.NewFlagSet("mntleak replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := "json"
	if stdoutTTY {
		def = "human"
	}
	format := fs.String("format", def, "findings output: human (a headline and its detail lines each), text (one line each) or json; human on a terminal, json otherwise")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mntleak replay [flags] FILE|-\n\nRuns the correlator over a stream recorded with `mntleak trace --record FILE`\n(- reads standard input) and prints the findings. A recording whose last line\nis cut short is replayed up to it, with a warning. Needs no privileges.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return opts, err
	}
	if fs.NArg() != 1 {
		return opts, errors.New("want exactly one FILE (or - for standard input)")
	}
	opts.file = fs.Arg(0)
	var err error
	if opts.format, err = output.ParseFormat(*format); err != nil {
		return opts, fmt.Errorf("invalid --format %q: want human, text or json", *format)
	}
	return opts, nil
}

func runReplay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseReplayFlags(args, isTerminal(stdout), stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "mntleak replay: %v\n", err)
		return exitUsage
	}
	in, name := stdin, "stdin"
	if opts.file != "-" {
		f, err := os.Open(opts.file)
		if err != nil {
			fmt.Fprintf(stderr, "mntleak replay: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in, name = f, opts.file
	}
	out := output.NewWriter(stdout, opts.format, nil)
	defer out.Close()
	var writeErr error
	var truncated *stream.TruncatedError
	// A recording made with enrichment holds the runtimes' answers: the
	// findings are filled from them as the daemon filled its own, never
	// from a live runtime. They are all read before the first finding.
	answers := attribution.NewReplay()
	var replayer *enrich.Replayer
	started := false
	if err := correlate.ReplayWith(in, name, func(fd *finding.Finding) {
		if !started {
			started = true
			replayer, _ = enrich.NewReplayer(answers)
		}
		if replayer != nil {
			replayer.Apply(fd)
		}
		if err := out.WriteFinding(fd); err != nil && writeErr == nil {
			writeErr = err
		}
	}, answers.Add); errors.As(err, &truncated) {
		// The findings of everything before it stand: a warning, exit 0.
		fmt.Fprintf(stderr, "mntleak replay: warning: %v\n", err)
	} else if err != nil {
		fmt.Fprintf(stderr, "mntleak replay: %v\n", err)
		return exitUsage
	}
	if err := out.Close(); err != nil || writeErr != nil {
		fmt.Fprintf(stderr, "mntleak replay: write findings: %v\n", errors.Join(err, writeErr))
		return exitError
	}
	return exitOK
}
