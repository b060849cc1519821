package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/mntleak/mntleak/sink/journald"
	"github.com/mntleak/mntleak/state"
)

// actionLog writes each action record of a release where it is kept: a
// JSON line on stderr (always), an entry in the journal (when one listens)
// and a line in the daemon's state dir (when there is one), which the
// daemon counts in mntleak_actions_total.
type actionLog struct {
	stderr   io.Writer
	stateDir string
	journal  *journald.Socket // nil: no journal
	warned   map[string]bool  // each place that failed is said once
}

func newActionLog(stateDir, socket string, stderr io.Writer) *actionLog {
	l := &actionLog{stderr: stderr, stateDir: stateDir, warned: map[string]bool{}}
	if socket != "" {
		if s := journald.NewSocket(socket, 0); s.Available() {
			l.journal = s
		}
	}
	return l
}

func (l *actionLog) log(r actionRecord) {
	r.Action = "release"
	b, _ := json.Marshal(r)
	fmt.Fprintln(l.stderr, string(b))
	if l.stateDir != "" {
		if err := state.AppendAction(l.stateDir, r); err != nil {
			l.warn("state dir", err)
		}
	}
	if l.journal != nil {
		if err := l.journal.Send(r.message(), r.priority(), r.fields(string(b))); err != nil {
			l.warn("journal", err)
		}
	}
}

func (l *actionLog) warn(where string, err error) {
	if l.warned[where] {
		return
	}
	l.warned[where] = true
	fmt.Fprintf(l.stderr, "mntleak release: warning: the action record was not kept in the %s: %v\n", where, err)
}

// message is the record in one human line.
func (r actionRecord) message() string {
	switch {
	case r.Step != nil:
		msg := "mntleak release " + r.Result + ": mount " + strconv.Itoa(r.Step.MountID) + " at " + r.Step.Where +
			" in mnt:[" + strconv.FormatUint(uint64(r.Step.MntNS), 10) + "]"
		if r.Error != "" {
			msg += ": " + r.Error
		}
		return msg
	case r.Refuse != nil:
		return "mntleak release refused: " + r.Refuse.Reason
	}
	return "mntleak release " + r.Result
}

func (r actionRecord) priority() journal.Priority {
	switch r.Result {
	case "released":
		return journal.PriNotice
	case "failed":
		return journal.PriErr
	}
	return journal.PriInfo
}

// fields are the record's journal fields: MNTLEAK_ACTION, MNTLEAK_RESULT,
// the copy, and the whole record as JSON in MNTLEAK_RECORD.
func (r actionRecord) fields(record string) map[string]string {
	f := map[string]string{"MNTLEAK_ACTION": r.Action, "MNTLEAK_RESULT": r.Result, "MNTLEAK_RECORD": record, "SYSLOG_IDENTIFIER": "mntleak"}
	if s := r.Step; s != nil {
		f["MNTLEAK_MNTNS"] = strconv.FormatUint(uint64(s.MntNS), 10)
		f["MNTLEAK_MOUNT_ID"] = strconv.Itoa(s.MountID)
		f["MNTLEAK_PATH"] = s.Where
	}
	if x := r.Refuse; x != nil {
		f["MNTLEAK_REASON"] = x.Reason
		if x.MntNS != 0 {
			f["MNTLEAK_MNTNS"] = strconv.FormatUint(uint64(x.MntNS), 10)
		}
	}
	if r.Error != "" {
		f["MNTLEAK_ERROR"] = r.Error
	}
	return f
}
