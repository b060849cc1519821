package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// TestLeakCandidates: a namespace that predates tracing can only have
// received a mount tracing saw by propagation, which also carries the
// unmount; unless it changed its own mounts since (here: bound its copy
// elsewhere), it is not searched, and when it did, the leak is found.
func TestLeakCandidates(t *testing.T) {
	const agentNS = 30
	slaveRoot := "40 39 254:0 / / rw master:1 - ext4 /dev/vda rw\n"
	tests := []struct {
		name  string
		bind  bool
		leaks int
	}{
		{"a slave copy, unmounted by propagation", false, 0},
		{"a slave copy bound elsewhere after the mount", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope"), proc(50, "agent", agentNS, "/agent.scope")},
				map[uint32]string{hostNS: hostWithoutVol, agentNS: slaveRoot})
			w.proc.tables[hostNS] = hostTable
			w.proc.tables[agentNS] = slaveRoot + "41 40 7:0 / /srv/vol rw master:3 - ext4 /dev/loop0 rw\n"
			w.send(mountEv(400, "kubelet", hostNS, "/dev/loop0", "/srv/vol", "ext4", 0, 0))
			w.send(exitEv(401, "true", hostNS)) // settles: the tables are read
			if tt.bind {
				w.proc.tables[agentNS] += "42 40 7:0 / /agent/vol rw master:3 - ext4 /dev/loop0 rw\n"
				w.send(mountEv(50, "agent", agentNS, "/srv/vol", "/agent/vol", "", unix.MS_BIND, 0))
				w.send(exitEv(402, "true", hostNS))
			}
			w.proc.tables[hostNS] = hostWithoutVol
			w.proc.tables[agentNS] = slaveRoot
			if tt.bind {
				w.proc.tables[agentNS] += "42 40 7:0 / /agent/vol rw master:3 - ext4 /dev/loop0 rw\n"
			}
			w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
			if len(w.findings) != tt.leaks {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Fatalf("%d findings, want %d", len(w.findings), tt.leaks)
			}
			if tt.leaks > 0 {
				f := w.findings[0]
				if f.Kind != finding.KindLeak || len(f.Holders) == 0 || f.Holders[0].MntNS != agentNS || f.Holders[0].Where != "/agent/vol" {
					t.Errorf("want a leak held in mnt:[%d] at /agent/vol: %s", agentNS, f.Line())
				}
			}
		})
	}
}

// TestUnknownNamespaceBefore: the kernel side sends mntns_before 0 for a
// thread it did not see forked; the lineage supplies where the process (or
// else its parent) was.
func TestUnknownNamespaceBefore(t *testing.T) {
	tests := []struct {
		name       string
		pid, ppid  int
		wantParent uint32
	}{
		{"a process of the snapshot", 300, 1, 4026531840},
		{"a process forked since, by one of the snapshot", 777, 1, 4026531840},
		{"nothing known", 778, 779, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope"), proc(300, "ntpd", hostNS, "")},
				map[uint32]string{hostNS: hostTable})
			ev := unshareEv(tt.pid, "unshare", 0, 20)
			ev.PPID = uint32(tt.ppid)
			w.send(ev)
			n := w.c.Lineage().Get(20)
			if n == nil || n.Parent != tt.wantParent {
				t.Fatalf("namespace 20: %+v, want parent %d", n, tt.wantParent)
			}
		})
	}
}

// A mount made before tracing (no mount event) that the node unmounts is
// a leak where a namespace that predates tracing still has it; the
// unmounting namespace's own table is no holder.
func TestLeakOfAMountMadeBeforeTracing(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", 80, "")},
		map[uint32]string{hostNS: hostTable, 80: "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"})
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	if f.Kind != finding.KindLeak || len(f.Holders) != 1 || f.Holders[0].MntNS != 80 || f.Holders[0].Where != "/srv/vol" {
		t.Errorf("got %s, want a leak held in mnt:[80] at /srv/vol only", f.Line())
	}
}
