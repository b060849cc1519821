package procfs

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/kmount"
	"github.com/mntleak/mntleak/internal/replayq"
)

// Ops of a Record.
const (
	OpProcesses   = "processes"
	OpMountinfo   = "mountinfo"
	OpPins        = "pins"
	OpBlockDevice = "blockdev"
	OpHostNS      = "hostns"
	OpCommand     = "command"
	OpRealPath    = "realpath"
	OpNSMountinfo = "nsmountinfo"
	OpMntNSID     = "mntnsid"
	OpNSFDs       = "nsfds"
	// KernelNamespaces' answers.
	OpMountNamespaces = "mntnamespaces"
	OpNSTable         = "nstable"
)

// Record is one Proc answer as it is written into a recorded stream (the
// "proc" member of a JSON line, next to the event lines).
type Record struct {
	Op        string      `json:"op"`
	PID       int         `json:"pid,omitempty"`
	Devs      []event.Dev `json:"devs,omitempty"`
	Path      string      `json:"path,omitempty"`
	Processes []Process   `json:"processes,omitempty"`
	Mounts    []*Mount    `json:"mounts,omitempty"`
	Pins      []Pin       `json:"pins,omitempty"`
	Dev       event.Dev   `json:"dev,omitempty"`
	MntNS     uint32      `json:"mntns,omitempty"`
	Command   *Command    `json:"command,omitempty"`
	RealPath  string      `json:"realpath,omitempty"`
	NSID      uint64      `json:"nsid,omitempty"`
	NSFDs     []NSFD      `json:"nsfds,omitempty"`
	// Namespaces: every mount namespace the kernel has (KernelNamespaces).
	Namespaces []kmount.Namespace `json:"namespaces,omitempty"`
	// Unreadable is how many processes a pin search could not read
	// (UnreadableError): the pins are the others'.
	Unreadable int    `json:"unreadable,omitempty"`
	Err        string `json:"error,omitempty"`
}

func (r *Record) key() string {
	switch r.Op {
	case OpMountinfo, OpCommand, OpMntNSID:
		return r.Op + " " + strconv.Itoa(r.PID)
	case OpNSTable:
		return r.Op + " " + strconv.FormatUint(r.NSID, 10)
	case OpBlockDevice, OpNSMountinfo:
		return r.Op + " " + r.Path
	case OpRealPath:
		return r.Op + " " + strconv.Itoa(r.PID) + " " + r.Path
	case OpPins:
		parts := make([]string, len(r.Devs))
		for i, d := range r.Devs {
			parts[i] = d.String()
		}
		return r.Op + " " + strings.Join(parts, ",")
	}
	return r.Op
}

func (r *Record) err() error {
	if r.Err == "" {
		return nil
	}
	return errors.New(r.Err)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Recorder passes every call to Proc and hands the answer to Write, in
// call order, so a replay can give the correlator the same answers.
type Recorder struct {
	Proc  Proc
	Write func(*Record)
}

// Processes implements Proc.
func (r Recorder) Processes() ([]Process, error) {
	procs, err := r.Proc.Processes()
	r.Write(&Record{Op: OpProcesses, Processes: procs, Err: errString(err)})
	return procs, err
}

// Mountinfo implements Proc.
func (r Recorder) Mountinfo(pid int) (uint32, []*Mount, error) {
	ns, mounts, err := r.Proc.Mountinfo(pid)
	r.Write(&Record{Op: OpMountinfo, PID: pid, MntNS: ns, Mounts: mounts, Err: errString(err)})
	return ns, mounts, err
}

// Pins implements Proc.
func (r Recorder) Pins(devs []event.Dev) ([]Pin, error) {
	pins, err := r.Proc.Pins(devs)
	r.Write(withSearchErr(&Record{Op: OpPins, Devs: devs, Pins: pins}, err))
	return pins, err
}

// withSearchErr records a search's error in rec: the count of processes
// it could not read (an *UnreadableError, which comes with answers), or
// the error that stopped it.
func withSearchErr(rec *Record, err error) *Record {
	var unreadable *UnreadableError
	if errors.As(err, &unreadable) {
		rec.Unreadable = unreadable.Processes
	} else {
		rec.Err = errString(err)
	}
	return rec
}

// searchErr is the error withSearchErr recorded.
func (rec *Record) searchErr() error {
	if rec.Unreadable > 0 {
		return &UnreadableError{Processes: rec.Unreadable}
	}
	return rec.err()
}

// BlockDevice implements Proc.
func (r Recorder) BlockDevice(path string) (event.Dev, error) {
	dev, err := r.Proc.BlockDevice(path)
	r.Write(&Record{Op: OpBlockDevice, Path: path, Dev: dev, Err: errString(err)})
	return dev, err
}

// HostNS implements Proc.
func (r Recorder) HostNS() (uint32, error) {
	ns, err := r.Proc.HostNS()
	r.Write(&Record{Op: OpHostNS, MntNS: ns, Err: errString(err)})
	return ns, err
}

// Command implements Proc.
func (r Recorder) Command(pid int) (Command, error) {
	c, err := r.Proc.Command(pid)
	r.Write(&Record{Op: OpCommand, PID: pid, Command: &c, Err: errString(err)})
	return c, err
}

// RealPath implements Proc.
func (r Recorder) RealPath(pid int, path string) (string, uint32, error) {
	real, ns, err := r.Proc.RealPath(pid, path)
	r.Write(&Record{Op: OpRealPath, PID: pid, Path: path, RealPath: real, MntNS: ns, Err: errString(err)})
	return real, ns, err
}

// NSMountinfo implements Proc.
func (r Recorder) NSMountinfo(file string) (uint32, []*Mount, error) {
	ns, mounts, err := r.Proc.NSMountinfo(file)
	r.Write(&Record{Op: OpNSMountinfo, Path: file, MntNS: ns, Mounts: mounts, Err: errString(err)})
	return ns, mounts, err
}

// MntNSID implements Proc.
func (r Recorder) MntNSID(pid int) (uint32, uint64, error) {
	ns, id, err := r.Proc.MntNSID(pid)
	r.Write(&Record{Op: OpMntNSID, PID: pid, MntNS: ns, NSID: id, Err: errString(err)})
	return ns, id, err
}

// NSFDs implements Proc.
func (r Recorder) NSFDs() ([]NSFD, error) {
	fds, err := r.Proc.NSFDs()
	r.Write(withSearchErr(&Record{Op: OpNSFDs, NSFDs: fds}, err))
	return fds, err
}

// MountNamespaces implements KernelNamespaces: the wrapped Proc's answer,
// or an error when it has none.
func (r Recorder) MountNamespaces() ([]kmount.Namespace, error) {
	var nss []kmount.Namespace
	err := errNoKernelNamespaces(r.Proc)
	if k, ok := r.Proc.(KernelNamespaces); ok {
		nss, err = k.MountNamespaces()
	}
	r.Write(&Record{Op: OpMountNamespaces, Namespaces: nss, Err: errString(err)})
	return nss, err
}

// NamespaceTable implements KernelNamespaces.
func (r Recorder) NamespaceTable(id uint64) ([]*Mount, error) {
	var mounts []*Mount
	err := errNoKernelNamespaces(r.Proc)
	if k, ok := r.Proc.(KernelNamespaces); ok {
		mounts, err = k.NamespaceTable(id)
	}
	r.Write(&Record{Op: OpNSTable, NSID: id, Mounts: mounts, Err: errString(err)})
	return mounts, err
}

// Replay answers from recorded Records: each call takes the next unused
// answer to the same question. A question that was never recorded gets an
// error, which the correlator reports as missing evidence.
type Replay struct {
	mu      sync.Mutex
	answers *replayq.Queue[*Record]
	shapes  shapes // the recorded tables' shapes (see shareShapes)
}

// NewReplay returns an empty Replay.
func NewReplay() *Replay {
	return &Replay{answers: replayq.New[*Record]()}
}

// Add queues a recorded answer.
func (r *Replay) Add(rec *Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shareShapes(rec)
	r.answers.Add(rec.key(), rec)
}

// shareShapes points the entries of a decoded record's table at the
// canonical copies of their shapes, so the copies of a mount in the tables
// of a replay share one as they do live. An entry that a recording wrote
// with none of its shape's fields (encoding/json then leaves the shape
// nil) gets an empty one: its fields read as zero, as mountinfo.Info's did.
func (r *Replay) shareShapes(rec *Record) {
	for _, m := range rec.Mounts {
		if m == nil {
			continue
		}
		var shape MountShape
		if m.MountShape != nil {
			shape = *m.MountShape
		}
		m.MountShape = r.shapes.of(shape)
	}
}

// AddStep queues the answers recorded while one event was handled. An
// answer of an earlier step still unused is dropped when this step answers
// the same question: a replaying correlator that asks less often than the
// recording one (it reuses a recent process list) gets the freshest
// answer, never an older one.
func (r *Replay) AddStep(recs []*Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fresh := map[string]bool{}
	for _, rec := range recs {
		r.shareShapes(rec)
		k := rec.key()
		if !fresh[k] {
			fresh[k] = true
			r.answers.Drop(k)
		}
		r.answers.Add(k, rec)
	}
}

// next takes the next answer to question k; with none queued, the last one
// given is repeated (a correlator that asks more often than the recording
// one did gets the freshest answer there is).
func (r *Replay) next(k string) (*Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answers.Next(k)
}

// Processes implements Proc.
func (r *Replay) Processes() ([]Process, error) {
	rec, err := r.next(OpProcesses)
	if err != nil {
		return nil, err
	}
	return rec.Processes, rec.err()
}

// Mountinfo implements Proc.
func (r *Replay) Mountinfo(pid int) (uint32, []*Mount, error) {
	rec, err := r.next((&Record{Op: OpMountinfo, PID: pid}).key())
	if err != nil {
		return 0, nil, err
	}
	return rec.MntNS, rec.Mounts, rec.err()
}

// Pins implements Proc.
func (r *Replay) Pins(devs []event.Dev) ([]Pin, error) {
	rec, err := r.next((&Record{Op: OpPins, Devs: devs}).key())
	if err != nil {
		return nil, err
	}
	return rec.Pins, rec.searchErr()
}

// BlockDevice implements Proc.
func (r *Replay) BlockDevice(path string) (event.Dev, error) {
	rec, err := r.next((&Record{Op: OpBlockDevice, Path: path}).key())
	if err != nil {
		return 0, err
	}
	return rec.Dev, rec.err()
}

// HostNS implements Proc.
func (r *Replay) HostNS() (uint32, error) {
	rec, err := r.next(OpHostNS)
	if err != nil {
		return 0, err
	}
	return rec.MntNS, rec.err()
}

// Command implements Proc.
func (r *Replay) Command(pid int) (Command, error) {
	rec, err := r.next((&Record{Op: OpCommand, PID: pid}).key())
	if err != nil || rec.Command == nil {
		return Command{}, err
	}
	return *rec.Command, rec.err()
}

// RealPath implements Proc.
func (r *Replay) RealPath(pid int, path string) (string, uint32, error) {
	rec, err := r.next((&Record{Op: OpRealPath, PID: pid, Path: path}).key())
	if err != nil {
		return "", 0, err
	}
	return rec.RealPath, rec.MntNS, rec.err()
}

// NSMountinfo implements Proc.
func (r *Replay) NSMountinfo(file string) (uint32, []*Mount, error) {
	rec, err := r.next((&Record{Op: OpNSMountinfo, Path: file}).key())
	if err != nil {
		return 0, nil, err
	}
	return rec.MntNS, rec.Mounts, rec.err()
}

// MntNSID implements Proc.
func (r *Replay) MntNSID(pid int) (uint32, uint64, error) {
	rec, err := r.next((&Record{Op: OpMntNSID, PID: pid}).key())
	if err != nil {
		return 0, 0, err
	}
	return rec.MntNS, rec.NSID, rec.err()
}

// NSFDs implements Proc.
func (r *Replay) NSFDs() ([]NSFD, error) {
	rec, err := r.next(OpNSFDs)
	if err != nil {
		return nil, err
	}
	return rec.NSFDs, rec.searchErr()
}

// MountNamespaces implements KernelNamespaces.
func (r *Replay) MountNamespaces() ([]kmount.Namespace, error) {
	rec, err := r.next(OpMountNamespaces)
	if err != nil {
		return nil, err
	}
	return rec.Namespaces, rec.err()
}

// NamespaceTable implements KernelNamespaces.
func (r *Replay) NamespaceTable(id uint64) ([]*Mount, error) {
	rec, err := r.next((&Record{Op: OpNSTable, NSID: id}).key())
	if err != nil {
		return nil, err
	}
	return rec.Mounts, rec.err()
}
