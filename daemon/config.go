package daemon

import (
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/output"
	"github.com/mntleak/mntleak/tracer"
)

// Config is what the daemon does: which events it prints where, whether it
// correlates, and where it keeps its state. cmd/mntleak fills it from flags
// and checks it; Run trusts it.
type Config struct {
	Format        output.Format // the event stream's encoding
	Filter        event.Filter  // selects the printed events; the correlator sees all
	Output        string        // event stream file (appended, reopened on SIGHUP); "" for stdout
	Record        string        // replayable record: events and /proc answers (truncated at start)
	Correlate     bool          // explain failures and report leaks
	JournalEvents bool          // also send every raw event to the journal
	MetricsAddr   string        // Prometheus metrics address, already checked; "" for none
	PprofAddr     string        // /debug/pprof/ address, loopback, already checked; "" for none

	StateDir   string // persistent lineage; "" for none
	StateBytes int64  // its size cap

	Buffer          tracer.Buffer // kernel-to-reader buffer
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
}
