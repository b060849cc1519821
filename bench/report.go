package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Row is one line of the results table.
type Row struct {
	Workload, Figure, Measured, Target string
	Status                             string // "met", "MISSED", or "not run"
	Hard                               bool   // a miss fails the run
}

const (
	met    = "met"
	missed = "MISSED"
	notRun = "not run"
)

func status(ok bool) string {
	if ok {
		return met
	}
	return missed
}

// hardTargetsMissed names every hard target that ran and was missed.
func hardTargetsMissed(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if r.Hard && r.Status == missed {
			out = append(out, "hard target missed: "+r.Workload+" — "+r.Figure+": measured "+r.Measured+", target "+r.Target)
		}
	}
	return out
}

func ms(s float64) string { return fmt.Sprintf("%.1f ms", s*1000) }

func pct(x float64) string { return fmt.Sprintf("%.1f%%", x*100) }

// Rows turns the results into the table of the issue, in its order.
func (rep *Report) Rows() []Row {
	var rows []Row
	rows = append(rows, rep.nullRow(), rep.churnRow(), rep.spawnRow(), rep.stormRow(), rep.dockerRow())
	rows = append(rows, rep.crowdRows()...)
	rows = append(rows, rep.memoryRow())
	return rows
}

func (rep *Report) nullRow() Row {
	row := Row{Workload: "null syscall loop (getppid), 2 threads", Figure: "ns/op ratio vs no tracer",
		Target: "≤ empty-BPF ratio × 1.10, and below bpftrace's", Status: notRun}
	s := rep.Null
	if len(s[NoTracer]) == 0 || len(s[Mntleak]) == 0 || len(s[Floor]) == 0 {
		return row
	}
	wall, wallOK := compare(s, "%.1f ns", 1)
	cpu, cpuOK := compare(rep.NullCPU, "%.1f ns", 1)
	row.Measured = "wall: " + wall + ". Thread CPU: " + cpu
	if c := rep.NullCPU; len(c[FloorEntry]) > 0 {
		row.Measured += fmt.Sprintf(". mntleak over the floor that also hooks sys_enter: ×%.3f wall, ×%.3f CPU",
			ratio(median(s[Mntleak]), median(s[FloorEntry])), ratio(median(c[Mntleak]), median(c[FloorEntry])))
	}
	row.Status = judged(wallOK, cpuOK)
	return row
}

// compare renders every variant's median and ratio to no tracer, and
// reports whether mntleak's ratio is within 10% of the empty program's and
// below bpftrace's.
func compare(s samples, format string, scale float64) (string, bool) {
	base := median(s[NoTracer])
	r := func(v Variant) float64 { return ratio(median(s[v]), base) }
	parts := []string{"none " + fmt.Sprintf(format, base*scale)}
	for _, v := range []Variant{Floor, FloorEntry, Mntleak, Bpftrace} {
		if len(s[v]) > 0 {
			parts = append(parts, fmt.Sprintf("%s "+format+" (×%.3f)", v, median(s[v])*scale, r(v)))
		}
	}
	ok := r(Mntleak) <= r(Floor)*1.10
	if len(s[Bpftrace]) > 0 {
		ok = ok && r(Mntleak) < r(Bpftrace)
	}
	return strings.Join(parts, ", "), ok
}

// judged is the status of a ratio target measured on wall time (the
// figure the target names) and on the workload threads' CPU time (what the
// tracer adds, without the time lost to other processes on a shared
// machine): the wall figure decides, the CPU one is said when they differ.
func judged(wallOK, cpuOK bool) string {
	switch {
	case wallOK && cpuOK:
		return met
	case wallOK:
		return met + " (wall; CPU " + missed + ")"
	case cpuOK:
		return missed + " (wall; CPU " + met + ")"
	}
	return missed
}

func (rep *Report) churnRow() Row {
	row := Row{Workload: fmt.Sprintf("file churn: create + unlink %dk files in tmpfs", rep.Config.ChurnFiles/1000),
		Figure: "wall ratio vs no tracer", Target: "≤ 1.03", Status: notRun}
	s, c := rep.Churn, rep.ChurnCPU
	if len(s[NoTracer]) == 0 || len(s[Mntleak]) == 0 {
		return row
	}
	wall, _ := compare(s, "%.0f ms", 1000)
	cpu, _ := compare(c, "%.0f ms", 1000)
	row.Measured = "wall: " + wall + ". Thread CPU: " + cpu
	row.Status = judged(ratio(median(s[Mntleak]), median(s[NoTracer])) <= 1.03,
		ratio(median(c[Mntleak]), median(c[NoTracer])) <= 1.03)
	return row
}

func (rep *Report) stormRow() Row {
	row := Row{Workload: fmt.Sprintf("mount storm: bind mount + umount pairs, %d threads, %s", rep.Config.StormThreads, rep.Config.StormTime),
		Figure: "events received / generated; daemon CPU", Target: "100% received (zero lost), daemon < 50% of one core",
		Hard: true, Status: notRun}
	s := rep.Storm
	if s == nil || s.Generated == 0 {
		return row
	}
	row.Measured = fmt.Sprintf("%d / %d received (%s), %d lost, %d failed; daemon CPU %s of one core; %.0f syscalls/s",
		s.Received, s.Generated, pct(float64(s.Received)/float64(s.Generated)), int64(s.Lost), s.Failed, pct(s.CPU), s.Rate)
	if rep.StormBaseline > 0 {
		row.Measured += fmt.Sprintf(" (no tracer %.0f/s, ×%.2f)", rep.StormBaseline, ratio(s.Rate, rep.StormBaseline))
	}
	allIn := s.Received == s.Generated && s.Lost == 0
	row.Status = status(allIn && s.CPU < 0.5)
	if !allIn {
		row.Status = missed
	} else if s.CPU >= 0.5 {
		// Only the loss is a hard failure; CPU is reported.
		row.Hard = false
	}
	return row
}

func (rep *Report) dockerRow() Row {
	row := Row{Workload: fmt.Sprintf("container churn: %d docker run/rm per round", rep.Config.Containers),
		Figure: "daemon CPU, findings", Target: "< 5% of one core, zero findings", Hard: true, Status: notRun}
	d := rep.Docker
	if d == nil || len(d.CPU) == 0 {
		return row
	}
	row.Measured = fmt.Sprintf("daemon CPU %s of one core (median of %d rounds); %d findings on the benchmark's containers",
		pct(median(d.CPU)), len(d.CPU), d.Findings)
	if len(d.WallNone) > 0 {
		row.Measured += fmt.Sprintf("; round wall ×%.3f vs no tracer", ratio(median(d.WallMntleak), median(d.WallNone)))
	}
	if d.OtherFindings > 0 {
		row.Measured += fmt.Sprintf(" (%d findings about other processes on the machine not counted)", d.OtherFindings)
	}
	row.Status = status(d.Findings == 0 && median(d.CPU) < 0.05)
	if d.Findings == 0 {
		row.Hard = false // the CPU share is a soft target
	}
	return row
}

func (rep *Report) crowdRows() []Row {
	c := rep.Crowd
	crowd := "?"
	if c != nil {
		crowd = fmt.Sprintf("%d processes and %d mount namespaces", c.Processes, c.Namespaces)
	} else {
		crowd = fmt.Sprintf("%d processes and %d mount namespaces", rep.Config.Processes, rep.Config.Namespaces)
	}
	lat := Row{Workload: "failure → finding latency, with " + crowd + " present", Figure: "p50 / p99",
		Target: "p99 ≤ 5 ms", Status: notRun}
	st := Row{Workload: "startup: load, attach, first snapshot", Figure: "wall", Target: "≤ 300 ms", Status: notRun}
	cmd := Row{Workload: "`mntleak why` / `audit` on the same node", Figure: "wall", Target: "≤ 50 ms", Status: notRun}
	if c == nil {
		return []Row{lat, st, cmd}
	}
	if len(c.Latencies) > 0 {
		p50, p99 := percentile(c.Latencies, 50), percentile(c.Latencies, 99)
		lat.Measured = fmt.Sprintf("p50 %s, p99 %s to the finding logged (%d of %d failures explained; max %s); "+
			"read from the daemon's stderr: p50 %s, p99 %s; daemon CPU %s per failure",
			ms(p50), ms(p99), len(c.Latencies), c.Trials, ms(percentile(c.Latencies, 100)),
			ms(percentile(c.Delivered, 50)), ms(percentile(c.Delivered, 99)), ms(c.FailureCPU))
		lat.Status = status(p99 <= 0.005 && len(c.Latencies) == c.Trials)
	}
	rows := []Row{lat}
	if n := c.NoNotes; n.Trials > 0 {
		off := Row{Workload: "the same, the daemon run with --mount-notes=false (the re-read path)", Figure: "p50 / p99", Target: "p99 ≤ 5 ms", Status: notRun}
		if len(n.Latencies) > 0 {
			off.Measured = fmt.Sprintf("p50 %s, p99 %s (%d of %d failures explained); daemon CPU %s per failure",
				ms(percentile(n.Latencies, 50)), ms(percentile(n.Latencies, 99)), len(n.Latencies), n.Trials, ms(n.FailureCPU))
			off.Status = status(percentile(n.Latencies, 99) <= 0.005 && len(n.Latencies) == n.Trials)
		}
		off.Hard = false
		rows = append(rows, off)
	}
	if len(c.StartupCrowd) > 0 {
		st.Measured = fmt.Sprintf("median %s with the crowd present (%s bare node); the daemon's CPU to that line %s with the crowd (%s bare)",
			ms(median(c.StartupCrowd)), ms(median(c.StartupBare)), ms(median(c.StartupCrowdCPU)), ms(median(c.StartupBareCPU)))
		st.Status = status(median(c.StartupCrowd) <= 0.3)
	}
	if len(c.Why) > 0 && len(c.Audit) > 0 {
		cmd.Measured = fmt.Sprintf("why %s, audit %s (medians, crowd present)", ms(median(c.Why)), ms(median(c.Audit)))
		cmd.Status = status(median(c.Why) <= 0.05 && median(c.Audit) <= 0.05)
	}
	return append(rows, st, cmd)
}

func (rep *Report) memoryRow() Row {
	row := Row{Workload: fmt.Sprintf("daemon memory with %d namespaces × %d mounts tracked", rep.Config.Namespaces, rep.Config.MountsPerNS),
		Figure: "RSS, Kubernetes naming off / on", Target: "≤ 40 MiB off, ≤ 64 MiB on", Status: notRun}
	m := rep.Memory
	if m == nil || m.RSS == 0 {
		return row
	}
	row.Measured = fmt.Sprintf("naming off: RSS %.1f MiB, peak %.1f MiB (%d namespaces tracked, %d watched, %d mount entries)",
		float64(m.RSS)/(1<<20), float64(m.HWM)/(1<<20), int(m.Tracked), int(m.Watched), m.Entries)
	if m.NamingRSS == 0 {
		row.Measured += "; naming on: not measured"
		return row
	}
	row.Measured += fmt.Sprintf("; naming on (a fake API server, --kubeconfig, Events on): RSS %.1f MiB, peak %.1f MiB (%d namespaces tracked, %d watched)",
		float64(m.NamingRSS)/(1<<20), float64(m.NamingHWM)/(1<<20), int(m.NamingTracked), int(m.NamingWatched))
	row.Status = status(m.RSS <= 40<<20 && m.NamingRSS <= 64<<20)
	return row
}

// Text renders the table for a terminal.
func (rep *Report) Text(rows []Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mntleak benchmark — %s\n", rep.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "command: %s\n", rep.CommandLine)
	fmt.Fprintf(&b, "machine: %s\n", rep.Machine.Line())
	fmt.Fprintf(&b, "elapsed: %s\n\n", rep.Elapsed.Round(time.Second))
	for _, r := range rows {
		hard := ""
		if r.Hard {
			hard = " (hard)"
		}
		fmt.Fprintf(&b, "[%s%s] %s — %s\n    measured: %s\n    target:   %s\n", r.Status, hard, r.Workload, r.Figure,
			orDash(r.Measured), r.Target)
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// Markdown renders the results section of docs/BENCHMARKS.md.
func (rep *Report) Markdown(rows []Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, %s in all.\n\n", rep.Started.UTC().Format("2006-01-02 15:04 MST"), rep.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "    %s\n\n", rep.CommandLine)
	m := rep.Machine
	fmt.Fprintf(&b, "| machine | |\n| --- | --- |\n| kernel | %s |\n| CPU | %s, %d cores |\n| memory | %d MiB |\n| Go | %s |\n| bpftrace | %s |\n| docker | %s |\n| mntleak commit | %s |\n| load average (1, 5, 15 min) | %s |\n\n",
		m.Kernel, m.CPU, m.Cores, m.MemoryMiB, m.Go, m.Bpftrace, m.Docker, m.Commit, m.loads())
	fmt.Fprintf(&b, "| workload | figure | measured | target | status |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Workload, r.Figure, orDash(r.Measured), r.Target, r.Status)
	}
	if len(rep.Errors) > 0 {
		b.WriteString("\nSections that failed:\n\n")
		for _, e := range rep.Errors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	b.WriteString("\nRaw samples (one per round, in seconds or ns/op):\n\n")
	for _, s := range []struct {
		name string
		s    samples
	}{{"null syscall wall ns/op", rep.Null}, {"null syscall CPU ns/op", rep.NullCPU},
		{"file churn wall s", rep.Churn}, {"file churn CPU s", rep.ChurnCPU},
		{"process churn wall s", rep.Spawn}, {"process churn daemon CPU s", rep.SpawnCPU}} {
		for _, v := range []Variant{NoTracer, Floor, FloorEntry, Mntleak, Bpftrace} {
			if len(s.s[v]) > 0 {
				fmt.Fprintf(&b, "- %s, %s: %s\n", s.name, v, floats(s.s[v]))
			}
		}
	}
	return b.String()
}

func floats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		if math.Abs(x) >= 10 {
			parts[i] = fmt.Sprintf("%.1f", x)
		} else {
			parts[i] = fmt.Sprintf("%.4f", x)
		}
	}
	return strings.Join(parts, " ")
}
