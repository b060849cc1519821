package main

import (
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/procfs"
)

// sight measures what why and audit can see of the node: the processes
// (/proc) and the files (the view: the node's own, through /proc/1/root
// from a container with hostPID, or none without hostPID).
func sight(host procfs.Host) (procfs.Visibility, nodeview.View, error) {
	vis, err := host.Visibility()
	if err != nil {
		return vis, nodeview.View{}, err
	}
	view, err := nodeview.Detect("/proc", vis.HostPIDNS)
	return vis, view, err
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
