package main

import (
	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/procfs"
)

// sight measures what why and audit may see of the node before they look:
// the PID namespace and capabilities (procfs.Host.Access) and the files
// (the view: the node's own, through /proc/1/root from a container with
// hostPID, or none without hostPID). What the snapshot then could not
// read is counted by listKept.visibility.
func sight(host procfs.Host) (procfs.Visibility, nodeview.View, error) {
	access := host.Access()
	view, err := nodeview.Detect("/proc", access.HostPIDNS)
	return access, view, err
}

// listKept is the host's /proc as a one-shot snapshot reads it, keeping
// the last process list it gave: why and audit say what they could not
// see from the list their answer came from, not from a second pass over
// /proc (a fifth of their time on a node of 2,000 processes).
type listKept struct {
	procfs.Host
	last procfs.ProcessList
}

// ProcessList implements procfs.ProcessLister.
func (k *listKept) ProcessList() (procfs.ProcessList, error) {
	l, err := k.Host.ProcessList()
	if err == nil {
		k.last = l
	}
	return l, err
}

// visibility is access with what the snapshot corr made through k could
// not read: processes, and namespaces whose table it has not.
func (k *listKept) visibility(access procfs.Visibility, corr *correlate.Correlator) procfs.Visibility {
	return k.Counted(access, k.last, func(ns uint32) bool { return corr.Ledger().Table(ns) != nil })
}

// sightLine says in one line which view was used and what could not be
// seen.
func sightLine(vis procfs.Visibility, view nodeview.View) string {
	line := view.Line()
	if note := vis.Text(); note != "" {
		line += "; " + note
	}
	return line
}
