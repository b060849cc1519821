package daemon

import (
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/sink/output"
	"github.com/mntleak/mntleak/tracer"
)

// Config is what the daemon does: which events it prints where, whether it
// correlates, and where it keeps its state. cmd/mntleak fills it from flags
// and checks it; Run trusts it.
type Config struct {
	// Format is the event stream's encoding; Human is a person's
	// terminal: stdout shows a start line and each finding in its short
	// form, the events only with Events (or in the Output file, as text),
	// and the log on stderr leaves findings out (FindingsOnStdout).
	Format        output.Format
	Events        bool         // with Human: the events on stdout too
	Filter        event.Filter // selects the printed events; the correlator sees all
	Output        string       // event stream file (appended, reopened on SIGHUP); "" for stdout
	Record        string       // replayable record: events and /proc answers (truncated at start)
	Correlate     bool         // explain failures and report leaks
	NoMountNotes  bool         // with Correlate: no kernel mount notes (fanotify mntns marks, 6.15+), only re-reads
	JournalEvents bool         // also send every raw event to the journal
	MetricsAddr   string       // Prometheus metrics address, already checked; "" for none
	PprofAddr     string       // /debug/pprof/ address, loopback, already checked; "" for none

	StateDir   string // persistent lineage; "" for none
	StateBytes int64  // its size cap

	Buffer          tracer.Buffer // kernel-to-reader buffer
	Hooks           tracer.Hooks  // sys_exit tracepoint or syscall trampolines
	RingBufferBytes int           // its size

	// Naming the workloads of a finding (findings.go): the CRI sockets
	// tried in order (none: no CRI), the Docker Engine's socket ("" for
	// none), each call's timeout, the kubelet's root and the node's name.
	CRISockets     []string
	DockerSocket   string
	RuntimeTimeout time.Duration
	KubeletRoot    string
	NodeName       string
	// Kube: ask the API server too (Kubeconfig, or "" for the in-cluster
	// config); K8sEvents: post findings as Events (needs Kube).
	Kube       bool
	Kubeconfig string
	K8sEvents  bool
}

// Journald says when the log goes to the journal too.
type Journald string

// The journal modes.
const (
	JournaldAuto Journald = "auto" // when its socket exists
	JournaldOn   Journald = "on"
	JournaldOff  Journald = "off"
)

// ParseJournald checks a --journald value.
func ParseJournald(s string) (Journald, bool) {
	switch j := Journald(s); j {
	case JournaldAuto, JournaldOn, JournaldOff:
		return j, true
	}
	return "", false
}

// LogConfig is where and how the daemon logs.
type LogConfig struct {
	Level         string   // debug, info, warn, error
	Format        string   // json or console
	Journald      Journald // tee to the journal
	JournalSocket string   // the journal's native socket
	// FindingsOnStdout: stdout shows each finding (Config.Format Human), so
	// stderr leaves them out; the journal still has them.
	FindingsOnStdout bool
}

// StartLine is the one line a person's terminal shows when tracing starts
// (Format Human): what runs, where findings appear, how to see more.
func StartLine(cfg Config) string {
	node := cfg.NodeName
	if node == "" {
		node = "this node"
	}
	s := "mntleak: watching mounts on " + node + "; "
	if cfg.Correlate {
		s += "each finding appears below: what is stuck, who holds it, the cause, the fix"
	} else {
		s += "findings are off (--correlate=false)"
	}
	if cfg.Events && cfg.Output == "" {
		s += "; every event too"
	} else {
		s += " (--events: every event too)"
	}
	return s + ". Ctrl-C stops."
}
