package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/journald"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/metrics"
	"github.com/mntleak/mntleak/output"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/state"
	"github.com/mntleak/mntleak/stream"
	"github.com/mntleak/mntleak/tracer"
)

type traceOptions struct {
	format        output.Format
	correlate     bool
	journald      string // auto, on, off
	journalEvents bool
	metricsAddr   string
	stateDir      string
	stateBytes    int64
	filter        event.Filter
	record        string
	output        string // "" for stdout
	journalSocket string
	ringBufBytes  int
	buffer        tracer.Buffer
	logLevel      string
	logFormat     string
}

// parseTraceFlags parses the trace flags. isTerminal tells whether stdout
// and stderr are terminals, which picks the default formats.
func parseTraceFlags(args []string, stdoutTTY, stderrTTY bool, stderr io.Writer) (traceOptions, error) {
	var opts traceOptions
	fs := flag.NewFlagSet("mntleak trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaultFormat, defaultLogFormat := "json", "json"
	if stdoutTTY {
		defaultFormat = "text"
	}
	if stderrTTY {
		defaultLogFormat = "console"
	}
	format := fs.String("format", defaultFormat, "event output: json (JSON lines) or text (one readable line each); json when stdout is not a terminal")
	fs.Var(uint32List{&opts.filter.PIDs, "pid"}, "pid", "only events of these processes (thread-group ids; repeatable, comma-separated)")
	fs.Var(stringList{&opts.filter.Comms}, "comm", "only events of processes with this command name (repeatable, comma-separated)")
	fs.Var(uint32List{&opts.filter.MntNS, "mount namespace"}, "mntns", "only events in or naming these mount namespaces (inode numbers or mnt:[N]; repeatable)")
	fs.StringVar(&opts.record, "record", "", "also write every event, and the /proc snapshots the correlator read, as JSON lines to this file (for mntleak replay; truncated at start, reopened on SIGHUP)")
	fs.StringVar(&opts.output, "output", "", "write the event stream to this file (appended to, reopened on SIGHUP for logrotate) instead of stdout")
	fs.StringVar(&opts.journalSocket, "journald-socket", journald.SocketPath, "the journal's native socket (a journal namespace NAME listens at /run/systemd/journal.NAME/socket)")
	fs.BoolVar(&opts.correlate, "correlate", true, "explain failures and report leaks as findings in the log")
	fs.StringVar(&opts.journald, "journald", "auto", "send findings and lifecycle logs to the systemd journal: auto (when /run/systemd/journal/socket exists), on, off")
	fs.BoolVar(&opts.journalEvents, "journald-events", false, "also send every raw event to the journal (high volume)")
	fs.StringVar(&opts.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (host:port, or :port for 127.0.0.1)")
	fs.StringVar(&opts.stateDir, "state-dir", "/var/lib/mntleak", stateDirHelp)
	fs.Int64Var(&opts.stateBytes, "state-size", state.DefaultMaxBytes, "size cap of the persistent lineage in bytes")
	fs.IntVar(&opts.ringBufBytes, "ringbuf-size", tracer.DefaultRingBufferBytes, "ring buffer size in bytes (a power of two); a perf buffer splits it over the CPUs")
	buffer := fs.String("buffer", "auto", "kernel-to-reader buffer: auto (ringbuf when the kernel has it, else perf), ringbuf, perf")
	fs.StringVar(&opts.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&opts.logFormat, "log-format", defaultLogFormat, "log format on stderr: json or console")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mntleak trace [flags]\n\nStreams mount-lineage events until SIGINT or SIGTERM. Needs root.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if opts.format, err = output.ParseFormat(*format); err != nil {
		return opts, err
	}
	if opts.buffer, err = tracer.ParseBuffer(*buffer); err != nil {
		return opts, fmt.Errorf("invalid -buffer %q: want auto, ringbuf or perf", *buffer)
	}
	if n := opts.ringBufBytes; n < 4096 || n&(n-1) != 0 {
		return opts, fmt.Errorf("invalid -ringbuf-size %d: want a power of two of at least 4096", n)
	}
	if opts.stateBytes < 64<<10 {
		return opts, fmt.Errorf("invalid -state-size %d: want at least 65536", opts.stateBytes)
	}
	switch opts.journald {
	case "auto", "on", "off":
	default:
		return opts, fmt.Errorf("invalid -journald %q: want auto, on or off", opts.journald)
	}
	if opts.metricsAddr != "" {
		addr, err := metrics.ListenAddr(opts.metricsAddr)
		if err != nil {
			return opts, err
		}
		opts.metricsAddr = addr
	}
	return opts, nil
}

func runTrace(args []string, stdout, stderr io.Writer) int {
	opts, err := parseTraceFlags(args, isTerminal(stdout), isTerminal(stderr), stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "mntleak trace: %v\n", err)
		return exitUsage
	}
	log, logs, err := openLog(opts, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak trace: %v\n", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	err = trace(ctx, opts, stdout, log, logs, hup)
	logs.close() // before the last line, written directly
	if err != nil {
		fmt.Fprintf(stderr, "mntleak trace: %v\n", err)
		return exitError
	}
	return exitOK
}

// trace wires the tracer to the writers and the correlator, and runs until
// ctx is done.
// reopen delivers the signals (SIGHUP) that reopen the output files.
func trace(ctx context.Context, opts traceOptions, stdout io.Writer, log *zap.Logger, logs logSinks, reopen <-chan os.Signal) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// Every slow output is behind a bounded queue: the reader never waits.
	sk, err := openSinks(ctx, opts, stdout, logs)
	if err != nil {
		return err
	}
	defer sk.close(log)
	out, rec := sk.out, sk.rec
	go sk.warnDrops(ctx, log, dropWarnInterval)
	go sk.reopenOn(ctx, reopen, log)
	fail := func(err error) {
		if err != nil {
			cancel(fmt.Errorf("write events: %w", err))
		}
	}

	var (
		tr   *tracer.Tracer
		mets *metrics.Metrics
	)
	if opts.metricsAddr != "" {
		ln, err := net.Listen("tcp", opts.metricsAddr)
		if err != nil {
			return fmt.Errorf("listen for metrics: %w", err)
		}
		mets = metrics.New(func() map[string]uint64 {
			out := map[string]uint64{}
			if tr != nil {
				if st, err := tr.Stats(); err == nil {
					for k, n := range st.Lost {
						out[k.String()] = n
					}
				}
			}
			return out
		})
		mets.SinkDrops(sk.dropped)
		go func() {
			if err := mets.Serve(ctx, ln, log.Named("metrics")); err != nil {
				cancel(err)
			}
		}()
	}

	var corr *correlate.Correlator
	if opts.correlate {
		var proc procfs.Proc = procfs.Host{}
		if rec != nil {
			proc = procfs.Recorder{Proc: proc, Write: func(r *procfs.Record) { fail(rec.WriteJSON(stream.ProcLine{Proc: r})) }}
		}
		flog := log.Named("correlate")
		corr = correlate.New(proc, correlate.Options{}, func(f *correlate.Finding) {
			flog.Log(output.FindingLevel(f), f.Line(), output.FindingFields(f)...)
			if mets != nil {
				mets.Finding(string(f.Kind), f.Cause.String(), f.Call.Time)
			}
		})
	}

	var stlog *lineageStore

	// Raw events go to the journal only when asked (volume), not to stderr.
	var eventLog *zap.Logger
	if opts.journalEvents && logs.journal != nil {
		eventLog = zap.New(logs.journal).Named("event")
	}

	var gaugesAt time.Time
	// The record holds every event the correlator consumes, so a replay
	// reaches the same findings; the filters only select what is printed.
	host := procfs.Host{}
	sink := func(ev *event.Event) {
		if opts.correlate && correlate.WantsCommand(ev) && !sk.drainOnly() {
			// A failure carries its command line from the kernel already.
			if cmd, err := host.Command(int(ev.PID)); err == nil {
				ev.Exe = cmd.Exe
				if ev.Cmdline == "" {
					ev.Cmdline = cmd.Cmdline
				}
			}
		}
		if eventLog != nil && opts.filter.Match(ev) {
			eventLog.Info(ev.Text(), zap.Stringer(logkey.Kind, ev.Kind), zap.String(logkey.Syscall, ev.Syscall),
				zap.String(logkey.Errno, ev.Errno), zap.Uint32(logkey.PID, ev.PID), zap.Uint32(logkey.MntNS, ev.MntNS))
		}
		if rec != nil {
			fail(rec.Write(ev))
		}
		stlog.append(ev)
		if opts.filter.Match(ev) {
			if !sk.discard {
				fail(out.Write(ev))
			}
		}
		if corr != nil && !sk.drainOnly() {
			corr.Handle(ev)
		}
		if mets != nil {
			if ev.Kind != event.KindLost { // counted by mntleak_events_lost_total
				mets.Event(ev.Kind.String())
			}
			// The gauges walk the correlator's state: once a second.
			if corr != nil && ev.Time.Sub(gaugesAt) >= time.Second {
				gaugesAt = ev.Time
				sz := corr.Size()
				mets.SetState(metrics.State{OpenLeaks: corr.OpenLeaks(), Namespaces: sz.Live, DeadNamespaces: sz.Dead,
					Mounts: sz.Mounts, Evicted: sz.Evicted})
			}
		}
	}
	t, err := tracer.New(tracer.Config{Sink: sink, Buffer: opts.buffer, RingBufferBytes: opts.ringBufBytes}, log.Named("tracer"))
	if err != nil {
		return err
	}
	defer t.Close()
	tr = t
	// After the tracer's checks (privileges first), before the snapshot:
	// the persistent lineage, what an earlier run saw, then what this one sees.
	if opts.stateDir != "" && corr != nil {
		stlog = openLineage(ctx, opts.stateDir, opts.stateBytes, corr, log)
		defer stlog.close()
	}

	if corr != nil {
		// After attaching: whatever happens during the snapshot is in the
		// ring buffer and is applied on top of it.
		if err := corr.Start(); err != nil {
			return fmt.Errorf("startup snapshot of /proc: %w", err)
		}
	}
	log.Info("tracing", zap.Stringer(logkey.Format, opts.format), zap.String(logkey.Record, opts.record),
		zap.Bool(logkey.Filter, !opts.filter.Empty()))

	runErr := t.Run(ctx)
	if st, err := t.Stats(); err == nil {
		fields := []zap.Field{zap.Uint64(logkey.Received, st.Received),
			zap.Uint64(logkey.LostTotal, st.LostTotal), zap.Uint64(logkey.DecodeErrors, st.DecodeErrors)}
		if st.Buffer == tracer.BufferPerf {
			// Events the reorder window could not put back in order.
			fields = append(fields, zap.Uint64(logkey.PerfLost, st.PerfLostSamples),
				zap.Uint64(logkey.ReorderLate, st.PerfReorderLate), zap.Uint64(logkey.ReorderForced, st.PerfReorderForced))
		}
		log.Info("stopped", fields...)
	}
	if runErr != nil {
		return runErr
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
