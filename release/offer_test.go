package release

import (
	"strconv"
	"testing"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// offerShape is a finding's primary holder as the kernel would show it to
// release: the holder's copy, and the caller's namespace (release's
// origin, here the host's) with or without the object.
type offerShape struct {
	name    string
	syscall string
	holder  finding.Holder
	self    *finding.Holder // the caller's namespace's holder, when it has the object
	origin  []Mount         // what the origin shows of the object
	copyTop Mount           // the holder's copy
}

// offerShapes: a private copy the caller no longer has (a leak); a peer
// of the caller's mount (a Bidirectional pod's own mount, as
// shared-propagation names it: the caller still has it); a slave of the
// caller's mount that a failed unmount could not take away (busy-copy);
// the same slave under a failed rmdir (not the unmount that is busy).
func offerShapes() []offerShape {
	const dev = event.Dev(0x27)
	proc := []finding.ProcRef{{PID: 60, Comm: "app"}}
	at := "/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/shared/sub"
	copyTop := Mount{ID: 205, OldID: 91, Parent: 201, Dev: dev, FSType: "tmpfs", Root: "/", Point: at}
	selfShared := &finding.Holder{MntNS: 1, Self: true, Where: at, MountID: 40, Propagation: "shared:21"}
	inOrigin := []Mount{{ID: 150, OldID: 40, Dev: dev, FSType: "tmpfs", Root: "/", Point: at, Peer: 21}}
	peer, slave := copyTop, copyTop
	peer.Peer = 21
	slave.Master = 21
	return []offerShape{
		{"a private copy the caller no longer has", "umount2",
			finding.Holder{MntNS: 9, Where: at, MountID: 91, Propagation: "private", Processes: proc}, nil, nil, copyTop},
		{"a peer of the caller's mount", "rmdir",
			finding.Holder{MntNS: 9, Where: at, MountID: 91, Propagation: "shared:21", Processes: proc}, selfShared, inOrigin, peer},
		{"a slave a failed unmount left", "umount2",
			finding.Holder{MntNS: 9, Where: at, MountID: 91, Propagation: "master:21", Processes: proc}, selfShared, inOrigin, slave},
		{"a slave, the rmdir failed", "rmdir",
			finding.Holder{MntNS: 9, Where: at, MountID: 91, Propagation: "master:21", Processes: proc}, selfShared, inOrigin, slave},
	}
}

// TestOfferedOnlyWhatReleaseTakes: over every cause and every shape of
// its primary holder, a finding offers a release command exactly when
// release would take that copy: its plan (Make, with --force so that
// processes working in the copy do not count) has a step for it, and the
// proof release reads from the kernel at that moment (proveLeak over the
// tables the shape gives) finds it a leak. A shared-propagation finding,
// whose holder made the mount the caller still has, offers none.
func TestOfferedOnlyWhatReleaseTakes(t *testing.T) {
	const host, self = 1, 1
	for _, c := range finding.Causes() {
		for _, s := range offerShapes() {
			f := &finding.Finding{Kind: finding.KindFailure, Cause: c, Fix: "the fix",
				Call:    finding.Call{Comm: "kubelet", Syscall: s.syscall, Errno: "EBUSY", MntNS: 1},
				Object:  finding.Object{Path: s.holder.Where, Dev: s.copyTop.Dev, FSType: "tmpfs"},
				Holders: []finding.Holder{s.holder}}
			if s.self != nil {
				f.Holders = append(f.Holders, *s.self)
			}
			offered := f.ReleaseCommand()
			takes := false
			for _, st := range Make(f, host, self, true).Steps {
				takes = takes || st.MntNS == s.holder.MntNS && st.MountID == s.holder.MountID
			}
			// The holder's table: its root and a witness copied with it
			// (a mount the origin had before the namespace was made).
			witness := Mount{ID: 206, OldID: 92, Parent: 201, Dev: 0x5, FSType: "proc", Root: "/", Point: "/proc"}
			holder := Table{Ino: 9, ID: 50, Mounts: []Mount{{ID: 201, OldID: 80, Dev: 0x1, FSType: "ext4", Root: "/", Point: "/"}, s.copyTop, witness}}
			origin := Table{Ino: 1, ID: 4, Mounts: append([]Mount{{ID: 100, OldID: 4, Dev: 0x5, FSType: "proc", Root: "/", Point: "/proc"}}, s.origin...)}
			failed := "" // the failed unmount the daemon kept: busy-copy's, by its definition
			if s.syscall == "umount2" || c == finding.CauseBusyCopy {
				failed = "umount2 EBUSY by kubelet"
			}
			_, err := proveLeak(holder, s.copyTop.ID, []Table{origin}, evidence{failedUnmount: failed})
			takes = takes && err == nil
			if (offered != "") != takes {
				t.Errorf("%s, %s: offers %q; release takes it: %v (proof: %v)", c, s.name, offered, takes, err)
			}
			want := "mntleak release --mntns 9 --mount-id " + strconv.Itoa(s.holder.MountID)
			if offered != "" && offered != want {
				t.Errorf("%s, %s: offers %q, want %q", c, s.name, offered, want)
			}
		}
	}
}
