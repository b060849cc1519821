package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/procfs"

	"github.com/mntleak/mntleak/finding"
)

// TestUnmountedObjectFromTheMountEvent: the correlator runs behind the
// kernel, and every table of the node it read already lacks /srv/vol when
// the unmount is judged. What was unmounted is then known only from the
// mount event: a block device (its source under /dev/) is identified by
// its device number, and the copy another namespace keeps is a leak. A
// mount whose source is no device is identified by the copy of a
// namespace made after the mount and before the unmount that has it at
// the same path (unmountedAsCopied), unless that namespace changed its own
// mounts since: then nothing identifies it, and there is no finding. The
// copy must show the mount's filesystem type, unless the mount named none
// (a bind: "" from the new mount API, "none" from mount --bind).
func TestUnmountedObjectFromTheMountEvent(t *testing.T) {
	const holderNS = 80
	tests := []struct {
		name     string
		source   string
		fstype   string // the mount event's; the copy is ext4
		ownMount bool   // the holder mounted something itself after it was made
		leak     bool
	}{
		{"a block device", "/dev/loop0", "ext4", false, true},
		{"a device that is no block device now", "/dev/loop9", "ext4", false, true},
		{"no device", "nfs:/export", "ext4", false, true},
		{"no device, and the holder mounted since", "nfs:/export", "ext4", true, false},
		{"a bind with no fstype", "/srv/src", "", false, true},
		{"a bind with fstype none", "/srv/src", "none", false, true},
		{"another filesystem at the path in the copy", "nfs:/export", "nfs", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostWithoutVol})
			w.send(mountEv(400, "kubelet", hostNS, tt.source, "/srv/vol", tt.fstype, 0, 0))
			w.send(unshareEv(20, "agent", hostNS, holderNS))
			w.proc.procs = append(w.proc.procs, proc(20, "agent", holderNS, ""))
			if tt.ownMount {
				w.send(mountEv(20, "agent", holderNS, "tmpfs", "/scratch", "tmpfs", 0, 0))
			}
			w.proc.tables[holderNS] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(exitEv(21, "true", hostNS)) // the tables are read: the node's lacks /srv/vol
			w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
			if !tt.leak {
				if len(w.findings) != 0 {
					t.Fatalf("a leak of an object nothing identifies: %s", w.findings[0].Line())
				}
				return
			}
			f := w.only()
			if f.Kind != finding.KindLeak || f.Object.Path != "/srv/vol" || f.Object.Dev.String() != "7:0" || len(f.Holders) != 1 {
				t.Fatalf("want one leak of /srv/vol (7:0) with one holder: %s", f.Line())
			}
			if h := f.Holders[0]; h.MntNS != holderNS || h.Where != "/srv/vol" {
				t.Errorf("holder %+v, want the copy at /srv/vol in mnt:[%d]: %s", h, holderNS, f.Line())
			}
		})
	}
}
