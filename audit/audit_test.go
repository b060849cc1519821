package audit_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/audit"
	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

const hostNS = 4026531840

// leakedNode is a correlator's snapshot of a node where a monitoring
// container (mnt:[70]) binds / privately at /host and holds a copy of
// /dev/loop0's mount, which the host no longer has.
func leakedNode(t *testing.T) *correlate.Correlator {
	t.Helper()
	cid := "5f2c0e1a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e"
	return started(t, nodeOf(t, []procfs.Process{
		{PID: 1, StartTime: 10, Comm: "systemd", MntNS: hostNS},
		{PID: 1500, PPID: 1, StartTime: 15000, Comm: "node_exporter", MntNS: 70, Cgroup: "/docker/" + cid},
	}, map[uint32]string{
		hostNS: "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 0:5 / /tmp rw shared:2 - tmpfs tmpfs rw\n",
		70:     "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n",
	}))
}

// runtimeNode is a node whose dockerd runs in a mount namespace of its
// own (mnt:[90]: MountFlags=slave).
func runtimeNode(t *testing.T) *correlate.Correlator {
	t.Helper()
	dockerd := procfs.Process{PID: 700, PPID: 1, StartTime: 7000, Comm: "dockerd", MntNS: 90}
	return started(t, oneNamespaceNode(t, dockerd, "300 299 254:0 / / rw master:1 - ext4 /dev/vda rw\n"))
}

// oneNamespaceNode is the /proc of a node where systemd runs in the host's
// namespace and p in a namespace of its own, whose mount table is text.
func oneNamespaceNode(t *testing.T, p procfs.Process, text string) *procfs.Replay {
	t.Helper()
	return nodeOf(t, []procfs.Process{{PID: 1, StartTime: 10, Comm: "systemd", MntNS: hostNS}, p}, map[uint32]string{p.MntNS: text})
}

// nodeOf is the /proc of a node of procs (the host's namespace hostNS),
// each namespace's table, tables[ns], read through its first process.
func nodeOf(t *testing.T, procs []procfs.Process, tables map[uint32]string) *procfs.Replay {
	t.Helper()
	rp := procfs.NewReplay()
	rp.Add(&procfs.Record{Op: procfs.OpHostNS, MntNS: hostNS})
	rp.Add(&procfs.Record{Op: procfs.OpProcesses, Processes: procs})
	read := map[uint32]bool{}
	for _, p := range procs {
		text, ok := tables[p.MntNS]
		if !ok || read[p.MntNS] {
			continue
		}
		ms, err := mountinfo.GetMountsFromReader(strings.NewReader(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		rp.Add(&procfs.Record{Op: procfs.OpMountinfo, PID: p.PID, MntNS: p.MntNS, Mounts: procfs.MountsOf(ms)})
		read[p.MntNS] = true
	}
	return rp
}

// started is a correlator that took its snapshot of proc.
func started(t *testing.T, proc procfs.Proc) *correlate.Correlator {
	t.Helper()
	c := correlate.New(proc, correlate.Options{}, func(*finding.Finding) {})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLeaksAndRisks(t *testing.T) {
	c := leakedNode(t)
	items := audit.Leaks(c, "")
	if len(items) != 1 || items[0].What != "block-device" || items[0].MntNS != 70 || items[0].Processes[0].Comm != "node_exporter" {
		t.Errorf("audit %+v", items)
	}
	if got := audit.Leaks(c, "/var/lib/other"); len(got) != 0 {
		t.Errorf("audit below another prefix: %+v", got)
	}
	risks := audit.Risks(c, audit.RiskFacts{MayDetachMounts: 0, LiveRestore: true}, "")
	var whats []string
	for _, r := range risks {
		whats = append(whats, r.What)
	}
	if strings.Join(whats, ",") != "may-detach-mounts,private-hostpath" {
		t.Errorf("risks %v, want may-detach-mounts and private-hostpath", whats)
	}
	if r := audit.Risks(c, audit.RiskFacts{MayDetachMounts: -1}, "/nowhere"); len(r) != 0 {
		t.Errorf("risks %+v with nothing risky in scope", r)
	}
	if r := audit.Risks(c, audit.RiskFacts{MayDetachMounts: 0}, "/nowhere"); len(r) != 0 {
		t.Errorf("the node's sysctl reported below a path prefix: %+v", r)
	}
	unit := audit.UnitSetting{Unit: "docker.service", Setting: "MountFlags=slave", File: "/lib/systemd/system/docker.service"}
	risks = audit.Risks(c, audit.RiskFacts{MayDetachMounts: -1, Units: []audit.UnitSetting{unit}}, "")
	if len(risks) != 2 || risks[0].What != "unit-mount-namespace" || risks[0].Where != unit.File ||
		!strings.Contains(risks[0].Detail, "docker.service has MountFlags=slave") || !strings.Contains(risks[0].Fix, "remove MountFlags=slave from docker.service") {
		t.Errorf("a runtime unit with a namespace of its own: %+v", risks)
	}
	if r := audit.Risks(c, audit.RiskFacts{MayDetachMounts: -1, Units: []audit.UnitSetting{unit}}, "/nowhere"); len(r) != 0 {
		t.Errorf("a unit reported below a path prefix: %+v", r)
	}
	// A runtime in a namespace of its own with live-restore is a risk of the
	// node, below no path: not reported below a path prefix, as a unit's.
	dockerd := runtimeNode(t)
	if r := audit.Risks(dockerd, audit.RiskFacts{MayDetachMounts: -1, LiveRestore: true}, ""); len(r) != 1 || r[0].What != "mountflags-live-restore" {
		t.Errorf("dockerd in mnt:[90] with live-restore: %+v", r)
	}
	if r := audit.Risks(dockerd, audit.RiskFacts{MayDetachMounts: -1, LiveRestore: true}, "/srv"); len(r) != 0 {
		t.Errorf("a runtime's namespace reported below a path prefix: %+v", r)
	}
	if !audit.LiveRestore(`{ "live-restore" : true }`, "") || !audit.LiveRestore("", "dockerd --live-restore") || audit.LiveRestore(`{"live-restore": false}`, "dockerd") {
		t.Error("live-restore detection")
	}
}

// cgroupsAfter is a /proc whose process list has no cgroups, as a
// one-shot's (procfs.Host.ListWithoutCgroups), and that answers each
// process's cgroup when asked (Correlator.ReadCgroups).
type cgroupsAfter struct {
	*procfs.Replay
	cgroups map[int]string
	nsOf    map[int]uint32 // the cgroup reader's namespace of a pid (default 80)
}

func (p cgroupsAfter) Cgroup(pid int) (string, uint32, error) {
	if ns, ok := p.nsOf[pid]; ok {
		return p.cgroups[pid], ns, nil
	}
	return p.cgroups[pid], 80, nil
}

// TestRisksNameTheirHolders: each risk names its holders with their
// containers and units, read after a list that had no cgroups: a
// container's private bind of /, a PrivateTmp unit started after it, a
// dockerd with live-restore in a namespace of its own (also on a node
// with no PrivateTmp unit, whose check reads every namespace's cgroups).
func TestRisksNameTheirHolders(t *testing.T) {
	procs := []procfs.Process{
		{PID: 1, StartTime: 10, Comm: "systemd", MntNS: hostNS},
		{PID: 700, PPID: 1, StartTime: 7000, Comm: "dockerd", MntNS: 90},
		{PID: 1500, PPID: 1, StartTime: 15000, Comm: "nginx", MntNS: 70},
		{PID: 2000, PPID: 1, StartTime: 20000, Comm: "chronyd", MntNS: 80},
	}
	for _, tt := range []struct {
		procs []procfs.Process
		want  []string
	}{
		{procs, []string{"mountflags-live-restore: 700 docker.service",
			"private-hostpath: 1500 5f2c0e1a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e", "privatetmp-after-containers: 2000 chrony.service"}},
		{procs[:2], []string{"mountflags-live-restore: 700 docker.service"}},
	} {
		var got []string
		for _, r := range audit.Risks(risksNode(t, tt.procs), audit.RiskFacts{MayDetachMounts: -1, LiveRestore: true}, "") {
			for _, p := range r.Processes {
				got = append(got, fmt.Sprintf("%s: %d %s%s", r.What, p.PID, p.Container, p.Unit))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("risks' holders %q, want %q", got, tt.want)
		}
	}
}

// risksNode is a node of procs, listed without cgroups: nginx, a container
// in mnt:[70], binds / at /host; chronyd in mnt:[80] has chrony.service's
// PrivateTmp; dockerd runs in mnt:[90].
func risksNode(t *testing.T, procs []procfs.Process) *correlate.Correlator {
	t.Helper()
	rp := nodeOf(t, procs, map[uint32]string{
		hostNS: "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n",
		70:     "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n",
		80:     privateTmpTable,
		90:     "400 399 254:0 / / rw master:1 - ext4 /dev/vda rw\n",
	})
	nsOf := map[int]uint32{}
	for _, p := range procs {
		nsOf[p.PID] = p.MntNS
	}
	return started(t, cgroupsAfter{Replay: rp, nsOf: nsOf, cgroups: map[int]string{
		1500: "/docker/5f2c0e1a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e",
		2000: "/system.slice/chrony.service", 700: "/system.slice/docker.service"}})
}

// TestSurvivorsNamedWithTheirCgroups: the survivors of a restarted
// runtime (shims alone in its old namespace, holding its overlay) are
// named with their units, read after a list that had no cgroups.
func TestSurvivorsNamedWithTheirCgroups(t *testing.T) {
	shim := procfs.Process{PID: 900, PPID: 1, StartTime: 9000, Comm: "containerd-shim", MntNS: 80}
	rp := oneNamespaceNode(t, shim,
		"200 199 0:91 / / rw - ext4 /dev/vda rw\n201 200 0:92 / /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw\n")
	c := started(t, cgroupsAfter{Replay: rp, cgroups: map[int]string{900: "/system.slice/containerd.service"}})
	items := audit.Leaks(c, "")
	if len(items) != 1 || items[0].What != "survivors" || len(items[0].Processes) != 1 ||
		items[0].Processes[0].PID != 900 || items[0].Processes[0].Unit != "containerd.service" {
		t.Errorf("items %+v, want the survivors item naming shim 900 of containerd.service", items)
	}
}

// TestPrivateTmpRiskBelowAPrefix: a PrivateTmp unit started after a
// container is a risk about /tmp: reported with no prefix and below one
// that /tmp is under, not below another; one started before is none.
func TestPrivateTmpRiskBelowAPrefix(t *testing.T) {
	for _, tt := range []struct {
		unitStart uint64
		prefix    string
		want      int
	}{{20000, "", 1}, {20000, "/", 1}, {20000, "/tmp", 1}, {20000, "/var/lib/docker", 0}, {20000, "/tmp/cache", 0}, {12000, "", 0}} {
		r := audit.Risks(privateTmpNode(t, tt.unitStart), audit.RiskFacts{MayDetachMounts: -1}, tt.prefix)
		if len(r) != tt.want || tt.want == 1 && (r[0].What != "privatetmp-after-containers" || r[0].MntNS != 80 || !strings.HasPrefix(r[0].Detail, "chrony.service (PrivateTmp) started after containers")) {
			t.Errorf("unit started at %d, below %q: %+v, want %d privatetmp-after-containers", tt.unitStart, tt.prefix, r, tt.want)
		}
	}
}

// privateTmpNode is a node where a container (mnt:[70]) started at 15000
// and chrony.service, PrivateTmp=yes (mnt:[80]), at unitStart.
func privateTmpNode(t *testing.T, unitStart uint64) *correlate.Correlator {
	t.Helper()
	return started(t, nodeOf(t, []procfs.Process{
		{PID: 1, StartTime: 10, Comm: "systemd", MntNS: hostNS},
		{PID: 1500, PPID: 1, StartTime: 15000, Comm: "nginx", MntNS: 70, Cgroup: "/docker/5f2c0e1a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e"},
		{PID: 2000, PPID: 1, StartTime: unitStart, Comm: "chronyd", MntNS: 80, Cgroup: "/system.slice/chrony.service"},
	}, map[uint32]string{70: "100 99 0:90 / / rw - overlay overlay rw\n", 80: privateTmpTable}))
}

// privateTmpTable is chrony.service's namespace's table: PrivateTmp=yes.
const privateTmpTable = "300 299 254:0 / / rw master:1 - ext4 /dev/vda rw\n" +
	"301 300 254:0 /tmp/systemd-private-0123456789abcdef0123456789abcdef-chrony.service-Ab12Cd/tmp /tmp rw master:1 - ext4 /dev/vda rw\n"
