package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/audit"
	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/nodeconf"
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/procfs"
)

func runAudit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mntleak audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the items as a JSON array")
	prefix := fs.String("path-prefix", "", "only mounts below this path (and no node-wide setting: the sysctl, units, live-restore)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mntleak audit [flags]\n\nScans every mount namespace for leaked mounts that exist now, and for\nconfiguration that makes leaks. Exit 1 when a leak is found (for cron and\nnode-problem-detector), 0 otherwise, 2 on bad input, 3 when none was found\nbut the node could not be seen (missing capabilities, no hostPID). Needs root.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseCommand(fs, args, "audit", stderr); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "mntleak audit: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *prefix != "" && !strings.HasPrefix(*prefix, "/") {
		fmt.Fprintf(stderr, "mntleak audit: -path-prefix %q: want an absolute path\n", *prefix)
		return exitUsage
	}
	// Like why's, the list leaves the cgroups out; audit reads those of the
	// namespaces its items name (audit.Leaks, audit.Risks).
	host := procfs.Host{ListWithoutCgroups: true}
	access, view, err := sight(host)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak audit: %v\n", err)
		return exitError
	}
	list := &listKept{Host: host}
	corr := correlate.New(list, correlate.Options{}, func(*finding.Finding) {})
	startErr := corr.Start()
	vis := list.visibility(access, corr)
	fmt.Fprintf(stderr, "mntleak audit: %s\n", sightLine(vis, view))
	facts, problems := riskFacts(host, view, corr.Lineage().Live())
	for _, p := range problems {
		fmt.Fprintf(stderr, "mntleak audit: node configuration not read: %s\n", p)
	}
	if startErr != nil {
		fmt.Fprintf(stderr, "mntleak audit: snapshot of /proc: %v\n", startErr)
		return exitError
	}
	items := audit.Leaks(corr, *prefix)
	items = append(items, audit.Risks(corr, facts, *prefix)...)
	leaks := 0
	for _, it := range items {
		if it.Kind == "leak" {
			leaks++
		}
	}
	if *asJSON {
		if items == nil {
			items = []audit.Item{}
		}
		b, _ := json.Marshal(items)
		fmt.Fprintln(stdout, string(b))
	} else {
		for i := range items {
			fmt.Fprintln(stdout, items[i].Line())
		}
		if len(items) == 0 && vis.Blind() {
			fmt.Fprintln(stdout, "no leaked mounts among what could be read")
		} else if len(items) == 0 {
			fmt.Fprintln(stdout, "no leaked mounts")
		}
	}
	if leaks > 0 {
		return exitError
	}
	if vis.Blind() {
		return exitBlind
	}
	return exitOK
}

// riskFacts reads the node settings the risk checks need, from the
// node's files as the view sees them (the node's, from a pod with
// hostPID), and says which configuration files could not be used. The
// dockerd and kubelet command lines are those of the snapshot's
// processes (the namespaces' members): no second list of every process.
func riskFacts(host procfs.Host, view nodeview.View, live []*correlate.Namespace) (audit.RiskFacts, []string) {
	f := audit.RiskFacts{MayDetachMounts: -1}
	// A sysctl of the kernel, the same from every namespace.
	if b, err := os.ReadFile("/proc/sys/fs/may_detach_mounts"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			f.MayDetachMounts = v
		}
	}
	cmdlines := map[string][]string{}
	var daemons []correlate.Member
	for _, n := range live {
		for _, m := range n.Members() {
			if m.TID == 0 && (m.Comm == "dockerd" || m.Comm == "kubelet") {
				daemons = append(daemons, m)
			}
		}
	}
	slices.SortFunc(daemons, func(a, b correlate.Member) int { return cmp.Compare(a.PID, b.PID) }) // /proc's order, as the list had
	for _, m := range daemons {
		if c, err := host.Command(m.PID); err == nil {
			cmdlines[m.Comm] = append(cmdlines[m.Comm], c.Cmdline)
		}
	}
	conf := nodeconf.Read(view, cmdlines)
	f.LiveRestore = conf.LiveRestore
	f.BindRoots = append(audit.DefaultBindRoots(), conf.DockerRoot, conf.ContainerdRoot, conf.KubeletRoot)
	f.CSIDirs = []string{conf.KubeletRoot + "/plugins", conf.KubeletRoot + "/plugins_registry"}
	for _, u := range conf.Units {
		f.Units = append(f.Units, audit.UnitSetting{Unit: u.Name, Setting: u.Setting, File: u.File})
	}
	return f, conf.Problems
}
