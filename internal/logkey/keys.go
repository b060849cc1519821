package logkey

// Field keys.
const (
	Error          = "error"
	Sink           = "sink"          // an output: stdout, record, journal
	Dropped        = "dropped"       // lines or entries an output dropped since the last warning
	DroppedTotal   = "dropped_total" // ... since the start
	Output         = "output"
	Socket         = "socket"
	Reason         = "reason"
	Segments       = "segments"
	Program        = "program"
	Attach         = "attach"
	Kind           = "kind"
	Lost           = "lost"
	LostTotal      = "lost_total"
	Received       = "received"
	DecodeErrors   = "decode_errors"
	RingBufBytes   = "ringbuf_bytes"
	Memlock        = "memlock"
	LostReadErrors = "lost_read_errors"
	Tracefs        = "tracefs"
	Verifier       = "verifier_log"
	Record         = "record"
	Format         = "format"
	Filter         = "filter"
	Attached       = "attached"
	Elapsed        = "elapsed"
	Unsent         = "unsent" // Kubernetes Events not sent before exit
	Waited         = "waited"
	Signal         = "signal"
	Replay         = "replay"
	PID            = "pid"
	MntNS          = "mntns"
	Addr           = "addr"
	Remembered     = "remembered"
	Buffer         = "buffer"
	PathWalk       = "path_walk" // bpf_loop or bounded loop (tracer.PathWalk)
	Hooks          = "hooks"     // tracepoint or trampoline (tracer.Hooks)
	HooksWhy       = "hooks_why" // why that path was chosen
	Disabled       = "disabled"
	Tracepoints    = "tracepoints"
	Capabilities   = "capabilities"
	CapEff         = "cap_eff"
	PerfLost       = "perf_lost_samples"
	// ReorderLate and ReorderForced: perf events released out of order.
	ReorderLate   = "perf_reorder_late"
	ReorderForced = "perf_reorder_forced"

	// Finding fields: the same names, upper-cased with an MNTLEAK_ prefix,
	// are the journald fields.
	Finding   = "finding"
	FindingID = "finding_id" // Finding.ID: what mntleak release --finding takes
	// Headline: the finding in at most 160 characters (Finding.Headline),
	// the journal's MESSAGE; the log's message is its long line.
	Headline    = "headline"
	Cause       = "cause"
	Syscall     = "syscall"
	Errno       = "errno"
	Path        = "path"
	Dev         = "dev"
	HolderPID   = "holder_pid"
	HolderComm  = "holder_comm"
	HolderMntNS = "holder_mntns"
	// HolderRole: how holder_pid holds the copy (pinner: a cwd, root, fd
	// or mapping in it; member: it keeps the namespace).
	HolderRole = "holder_role"
	Container  = "container"
	Unit       = "unit"
	LeakEvent  = "leak_event"
	Inferred   = "inferred"
	// EvidenceLost: events lost while a finding's evidence formed.
	EvidenceLost = "evidence_lost"
	Detail       = "detail"

	// A finding in pod terms (package enrich): the stuck pod and its
	// volume, the holder's workload (holder_container: its name in the pod
	// spec, else the runtime's name), the node, and why the names are not
	// all there (enrichment).
	StuckPod        = "stuck_pod"
	StuckNamespace  = "stuck_namespace"
	StuckPodUID     = "stuck_pod_uid"
	StuckVolume     = "stuck_volume"
	StuckVolumeType = "stuck_volume_type"
	HolderPod       = "holder_pod"
	HolderNamespace = "holder_namespace"
	HolderContainer = "holder_container"
	HolderImage     = "holder_image"
	Node            = "node"
	Enrichment      = "enrichment"

	// Attribution sources and Kubernetes Events.
	Pod        = "pod"
	CRISocket  = "cri_socket"
	Kubeconfig = "kubeconfig"
	K8sEvents  = "k8s_events"
)
