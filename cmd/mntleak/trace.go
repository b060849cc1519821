package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/mntleak/mntleak/attribution/cri"
	"github.com/mntleak/mntleak/attribution/docker"
	"github.com/mntleak/mntleak/daemon"
	"github.com/mntleak/mntleak/kubeletpath"
	"github.com/mntleak/mntleak/metrics"
	"github.com/mntleak/mntleak/sink/journald"
	"github.com/mntleak/mntleak/sink/output"
	"github.com/mntleak/mntleak/state"
	"github.com/mntleak/mntleak/tracer"
)

// traceOptions are the trace flags: what the daemon does and how it logs.
type traceOptions struct {
	daemon daemon.Config
	log    daemon.LogConfig
}

// stateDirHelp is the --state-dir help: what a damaged or unusable
// directory does to the daemon.
const stateDirHelp = `keep the persistent lineage here ("" to disable): a restarted daemon still cites earlier namespace creations and binds. ` +
	`Damaged files in it (truncated, garbled, not regular files) are skipped with one warning each, naming them. ` +
	`A directory that cannot be used (a file in its place, no permission, a read-only or full disk) is reported once at error level ` +
	`and the daemon traces on without persistence: the lineage is an aid to explanations, never a reason to stop explaining`

// traceFlagValues are the trace flags that are checked and turned into
// options only after parsing, as given.
type traceFlagValues struct {
	format     string // --format
	mountNotes bool   // --mount-notes
	journald   string // --journald
	buffer     string // --buffer
	hooks      string // --hooks
	criSocket  string // --cri-socket
}

// parseTraceFlags parses the trace flags. stdoutTTY and stderrTTY tell
// whether stdout and stderr are terminals, which picks the default formats.
func parseTraceFlags(args []string, stdoutTTY, stderrTTY bool, stderr io.Writer) (traceOptions, error) {
	var opts traceOptions
	fs := flag.NewFlagSet("mntleak trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	given := defineTraceFlags(fs, &opts, stdoutTTY, stderrTTY)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mntleak trace [flags]\n\nStreams mount-lineage events until SIGINT or SIGTERM. Needs root.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	err := checkTraceFlags(fs, &opts, given)
	return opts, err
}

// defineTraceFlags defines the trace flags on fs: most set opts directly,
// the rest are given, for checkTraceFlags. stdoutTTY and stderrTTY pick
// the default formats.
func defineTraceFlags(fs *flag.FlagSet, opts *traceOptions, stdoutTTY, stderrTTY bool) *traceFlagValues {
	given := &traceFlagValues{}
	d := &opts.daemon
	defaultFormat, defaultLogFormat := "json", "json"
	if stdoutTTY {
		defaultFormat = "human"
	}
	if stderrTTY {
		defaultLogFormat = "console"
	}
	fs.StringVar(&given.format, "format", defaultFormat, "stdout: human (a start line, then each finding as a headline and its detail lines; the events only with --events), "+
		"text (every event, one readable line each) or json (every event as a JSON line); human on a terminal, json otherwise")
	fs.BoolVar(&d.Events, "events", false, "with --format human: print every event on stdout too, one line each (--output FILE writes them to FILE)")
	fs.Var(uint32List{&d.Filter.PIDs, "pid"}, "pid", "only events of these processes (thread-group ids; repeatable, comma-separated)")
	fs.Var(stringList{&d.Filter.Comms}, "comm", "only events of processes with this command name (repeatable, comma-separated)")
	fs.Var(uint32List{&d.Filter.MntNS, "mount namespace"}, "mntns", "only events in or naming these mount namespaces (inode numbers or mnt:[N]; repeatable)")
	fs.StringVar(&d.Record, "record", "", "also write every event, and the /proc snapshots the correlator read, as JSON lines to this file (for mntleak replay; truncated at start, reopened on SIGHUP)")
	fs.StringVar(&d.Output, "output", "", "write the event stream to this file (appended to, reopened on SIGHUP for logrotate) instead of stdout")
	fs.StringVar(&opts.log.JournalSocket, "journald-socket", journald.SocketPath, "the journal's native socket (a journal namespace NAME listens at /run/systemd/journal.NAME/socket)")
	fs.BoolVar(&d.Correlate, "correlate", true, "explain failures and report leaks as findings in the log")
	fs.BoolVar(&given.mountNotes, "mount-notes", true, "keep the correlator's mount tables true the moment a copy is detached or a mount is made in a watched namespace, from the kernel's own notifications (fanotify mount-namespace marks, Linux 6.15+; =false, or an older kernel: tables are re-read when needed)")
	fs.StringVar(&given.journald, "journald", "auto", "send findings and lifecycle logs to the systemd journal: auto (when /run/systemd/journal/socket exists), on, off")
	fs.BoolVar(&d.JournalEvents, "journald-events", false, "also send every raw event to the journal (high volume)")
	fs.StringVar(&d.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (host:port, or :port for 127.0.0.1)")
	fs.StringVar(&d.PprofAddr, "pprof-addr", "", "serve the daemon's own profiles (/debug/pprof/) on this loopback address (127.0.0.1:PORT); off by default, never on a non-loopback address")
	fs.StringVar(&d.StateDir, "state-dir", "/var/lib/mntleak", stateDirHelp)
	fs.Int64Var(&d.StateBytes, "state-size", state.DefaultMaxBytes, "size cap of the persistent lineage in bytes")
	fs.IntVar(&d.RingBufferBytes, "ringbuf-size", tracer.DefaultRingBufferBytes, "ring buffer size in bytes (a power of two); a perf buffer splits it over the CPUs")
	fs.StringVar(&given.buffer, "buffer", "auto", "kernel-to-reader buffer: auto (ringbuf when the kernel has it, else perf), ringbuf, perf")
	fs.StringVar(&given.hooks, "hooks", "auto", "where the syscall programs run: auto (trampoline when the kernel has BPF trampolines, else tracepoint), trampoline (fexit on the traced syscalls' functions), tracepoint (the sys_exit tracepoint)")
	fs.StringVar(&given.criSocket, "cri-socket", "auto", "CRI runtime socket asked for the container and pod names of a finding's processes: auto (the first of "+
		strings.Join(cri.DefaultSockets, ", ")+" that exists), a path, or \"\" for none")
	fs.StringVar(&d.DockerSocket, "docker-socket", docker.DefaultSocket, "Docker Engine socket asked for container names (\"\" for none)")
	fs.DurationVar(&d.RuntimeTimeout, "runtime-timeout", 2*time.Second, "timeout of each question to a runtime or the API server (findings are logged with what is known after it)")
	fs.StringVar(&d.KubeletRoot, "kubelet-root", kubeletpath.DefaultRoot, "the kubelet's --root-dir: a path under ROOT/pods/UID/ names the pod and volume it belongs to")
	fs.StringVar(&d.NodeName, "node-name", hostname(), "this node's name (the node field of findings, the reportingInstance of Events, the pods asked from the API server)")
	fs.StringVar(&d.Kubeconfig, "kubeconfig", "", "kubeconfig file: ask the API server for pod names (and, with --k8s-events, post Events); the in-cluster config with --k8s-events alone")
	fs.BoolVar(&d.K8sEvents, "k8s-events", true, "post findings as Kubernetes Events (events.k8s.io/v1) on the stuck pod and the holder pod; by default wherever the API server can be reached (--kubeconfig, or the in-cluster config in a pod with a ServiceAccount token); =false: never")
	fs.StringVar(&opts.log.Level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&opts.log.Format, "log-format", defaultLogFormat, "log format on stderr: json or console")
	return given
}

// checkTraceFlags checks the values of the parsed trace flags fs, turns
// those given as text into opts, and fills in what follows from them (the
// log level with findings on stdout, Events, the listen addresses); the
// first bad value is the error.
func checkTraceFlags(fs *flag.FlagSet, opts *traceOptions, given *traceFlagValues) error {
	d := &opts.daemon
	var err error
	if d.Format, err = output.ParseFormat(given.format); err != nil {
		return fmt.Errorf("invalid --format %q: want human, text or json", given.format)
	}
	if d.Format == output.Human {
		// Findings are on stdout: stderr keeps the warnings and errors
		// (the journal still gets every entry from info up).
		opts.log.FindingsOnStdout = true
		if !flagGiven(fs, "log-level") {
			opts.log.Level = "warn"
		}
	}
	if d.Buffer, err = tracer.ParseBuffer(given.buffer); err != nil {
		return fmt.Errorf("invalid --buffer %q: want auto, ringbuf or perf", given.buffer)
	}
	if d.Hooks, err = tracer.ParseHooks(given.hooks); err != nil {
		return fmt.Errorf("invalid --hooks %q: want auto, trampoline or tracepoint", given.hooks)
	}
	d.NoMountNotes = !given.mountNotes
	if n := d.RingBufferBytes; n < 4096 || n&(n-1) != 0 {
		return fmt.Errorf("invalid --ringbuf-size %d: want a power of two of at least 4096", n)
	}
	if d.StateBytes < 64<<10 {
		return fmt.Errorf("invalid --state-size %d: want at least 65536", d.StateBytes)
	}
	var ok bool
	if opts.log.Journald, ok = daemon.ParseJournald(given.journald); !ok {
		return fmt.Errorf("invalid --journald %q: want auto, on or off", given.journald)
	}
	switch given.criSocket {
	case "auto":
		d.CRISockets = cri.DefaultSockets
	case "":
	default:
		d.CRISockets = []string{given.criSocket}
	}
	if d.RuntimeTimeout <= 0 {
		return fmt.Errorf("invalid --runtime-timeout %v: want a positive duration", d.RuntimeTimeout)
	}
	if d.KubeletRoot == "" || !filepath.IsAbs(d.KubeletRoot) {
		return fmt.Errorf("invalid --kubelet-root %q: want an absolute path", d.KubeletRoot)
	}
	if on, explicit := eventsByDefault(fs, d.Kubeconfig, d.NodeName); !explicit {
		d.K8sEvents = on
	}
	if d.NodeName == "" && d.K8sEvents {
		return errors.New("--k8s-events needs --node-name (the hostname could not be read)")
	}
	d.Kube = d.Kubeconfig != "" || d.K8sEvents
	if d.MetricsAddr != "" {
		addr, err := metrics.ListenAddr(d.MetricsAddr)
		if err != nil {
			return err
		}
		d.MetricsAddr = addr
	}
	if d.PprofAddr != "" {
		addr, err := metrics.PprofAddr(d.PprofAddr)
		if err != nil {
			return err
		}
		d.PprofAddr = addr
	}
	return nil
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
	log, err := daemon.OpenLog(opts.log, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak trace: %v\n", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	err = daemon.Run(ctx, opts.daemon, stdout, log, hup)
	log.Close() // before the last line, written directly
	if err != nil {
		fmt.Fprintf(stderr, "mntleak trace: %v\n", err)
		return exitError
	}
	return exitOK
}

// hostname is --node-name's default: the kubelet names its node so unless
// told otherwise.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(h)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
