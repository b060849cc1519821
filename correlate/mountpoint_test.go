package correlate_test

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// An umount2 EINVAL ("not a mount point here") is explained by another
// namespace's copy only when that copy's mount point is the path that
// failed (seen through bind roots): a directory that is only the source of
// a bind elsewhere, or a path below a mount point, is no mount point
// anywhere.
func TestEINVALNeedsAMountpoint(t *testing.T) {
	const other = 80
	tests := []struct {
		name, otherTable, path string
		want                   int
	}{
		{"the source of a bind elsewhere", "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 254:0 /srv/src /mnt/x rw - ext4 /dev/vda rw\n",
			"/srv/src", 0},
		{"a directory below a mount point, bound elsewhere", "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 /sub /mnt/y rw - ext4 /dev/loop0 rw\n",
			"/srv/vol/sub", 0},
		{"a path below the copy of a mount point", "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n",
			"/srv/vol/sub", 0},
		{"a copy at the path (control)", "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 0:77 / /srv/src rw - tmpfs tmpfs rw\n",
			"/srv/src", 1},
		{"a copy seen through a bind root (control)", "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 254:0 / /host rw - ext4 /dev/vda rw\n112 111 0:77 / /host/srv/src rw - tmpfs tmpfs rw\n",
			"/srv/src", 1},
		{"a copy at the path, asked through a symbolic link (control)", "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 0:4 net:[4026532400] /run/docker/netns/8f34 rw - nsfs nsfs rw\n",
			"/var/run/docker/netns/8f34", 1},
		{"a copy stacked on a bind of the path (control)", "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 254:0 /srv/src /mnt/x rw - ext4 /dev/vda rw\n112 111 0:77 / /mnt/x rw - tmpfs tmpfs rw\n",
			"/srv/src", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(30, "umount", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.proc.links = map[string]string{"/var/run": "/run"}
			w.send(unshareEv(20, "app", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "app", other, ""))
			w.proc.tables[other] = tt.otherTable
			w.send(exitEv(21, "true", other))
			w.send(umountEv(30, "umount", hostNS, tt.path, -int64(unix.EINVAL)))
			if len(w.findings) != tt.want {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Fatalf("%d findings, want %d", len(w.findings), tt.want)
			}
			// A network namespace file is named as what it is.
			if strings.Contains(tt.otherTable, "nsfs") && !strings.Contains(w.findings[0].Line(), tt.path+" (net:[4026532400]) by umount[30]") {
				t.Errorf("the netns is not named net:[4026532400]: %s", w.findings[0].Line())
			}
		})
	}
}

// An umount2 EINVAL right after the caller's own successful unmount of the
// same path is a runtime unmounting twice (dockerd removing a volume,
// containerd-shim its rootfs): the leak its first unmount left was reported
// then; the second unmount gets no finding. From a namespace that never
// unmounted the path, the same EINVAL is explained.
func TestDoubleUnmount(t *testing.T) {
	const other = 80
	tests := []struct {
		name   string
		second uint32 // the namespace of the second, failing unmount
		want   int    // findings after the leak
	}{
		{"the same namespace unmounts again", hostNS, 0},
		{"another namespace unmounts (control)", 90, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "ntpd", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "ntpd", other, ""))
			w.proc.tables[other] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(exitEv(21, "true", other))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "dockerd", hostNS, "/srv/vol", 0))
			if len(w.findings) != 1 || w.findings[0].Kind != finding.KindLeak {
				t.Fatalf("%d findings after the first unmount, want the leak", len(w.findings))
			}
			if tt.second != hostNS {
				w.send(unshareEv(50, "dockerd", hostNS, tt.second))
				w.proc.procs = append(w.proc.procs, proc(50, "dockerd", tt.second, ""))
				w.proc.tables[tt.second] = hostWithoutVol
				w.send(exitEv(51, "true", tt.second))
			}
			w.findings = nil
			w.send(umountEv(40, "dockerd", tt.second, "/srv/vol", -int64(unix.EINVAL)))
			if len(w.findings) != tt.want {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Errorf("%d findings for the second unmount, want %d", len(w.findings), tt.want)
			}
		})
	}
}

// The fix fits the facts: a namespace that is already a slave is not told
// to use slave propagation; it missed the unmount because the mount above
// the object was private where it was unmounted, and that is named.
func TestFixForASlaveNamespace(t *testing.T) {
	const other = 80
	privateHost := "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n4 1 254:0 /srv /srv rw - ext4 /dev/vda rw\n3 4 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	tests := []struct {
		name, root, want, wantNot string
	}{
		{"a private namespace", "110 109 254:0 / / rw - ext4 /dev/vda rw\n", "unshare --propagation slave", "already a slave"},
		{"a slave namespace", "110 109 254:0 / / rw master:1 - ext4 /dev/vda rw\n",
			"mnt:[80] is already a slave: the unmount did not reach it because /srv is private in the host; make it shared there (mount --make-rshared /srv)", "unshare --propagation slave"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: privateHost})
			w.send(unshareEv(20, "agent", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "agent", other, ""))
			w.proc.tables[other] = tt.root + "114 110 254:0 /srv /srv rw - ext4 /dev/vda rw\n111 114 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(exitEv(21, "true", other))
			w.proc.tables[hostNS] = "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n4 1 254:0 /srv /srv rw - ext4 /dev/vda rw\n"
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			f := w.only()
			if !strings.Contains(f.Fix, tt.want) || strings.Contains(f.Fix, tt.wantNot) {
				t.Errorf("fix %q: want %q, not %q", f.Fix, tt.want, tt.wantNot)
			}
		})
	}
}
