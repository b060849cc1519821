package release

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
)

// The tables are shaped as this machine's 6.18 makes them (docs/release.md):
// unshare copies the origin's tree in one batch of unique ids, in the
// origin's order; what the namespace mounts later is newer than the batch.
func TestProveLeak(t *testing.T) {
	root := Mount{ID: 100, OldID: 20, Dev: event.MakeDev(254, 0), Point: "/", Root: "/", FSType: "ext4"}
	proc := Mount{ID: 101, OldID: 21, Parent: 100, Dev: event.MakeDev(0, 20), Point: "/proc", Root: "/", FSType: "proc"}
	vol := Mount{ID: 102, OldID: 22, Parent: 100, Dev: event.MakeDev(0, 38), Point: "/srv/vol", Root: "/", FSType: "tmpfs"}
	sub := Mount{ID: 103, OldID: 23, Parent: 102, Dev: event.MakeDev(0, 40), Point: "/srv/vol/sub", Root: "/", FSType: "tmpfs"}
	run := Mount{ID: 104, OldID: 24, Parent: 100, Dev: event.MakeDev(0, 41), Point: "/run", Root: "/", FSType: "tmpfs"}
	origin := Table{Ino: 1, ID: 4, Mounts: []Mount{root, proc, run}} // vol and sub unmounted since
	copyOf := func(m Mount, id uint64, parent uint64) Mount {
		m.ID, m.OldID, m.Parent = id, int(id)-100, parent
		return m
	}
	holderRoot := copyOf(root, 200, 199)
	batch := []Mount{holderRoot, copyOf(proc, 201, 200), copyOf(vol, 202, 200), copyOf(sub, 203, 202), copyOf(run, 204, 200)}
	own := Mount{ID: 205, OldID: 105, Parent: 200, Dev: event.MakeDev(0, 39), Point: "/srv/own", Root: "/", FSType: "tmpfs"}
	lastCopy := Mount{ID: 205, OldID: 105, Parent: 200, Dev: event.MakeDev(0, 42), Point: "/srv/last", Root: "/", FSType: "tmpfs"}
	ledgerSays := func(Mount) (string, bool) { return "the daemon's ledger: recorded", true }
	for _, tt := range []struct {
		name    string
		holder  []Mount
		copyID  uint64
		origins []Table
		ev      evidence
		want    string // in the proof, or in the refusal
		proven  bool
		below   int
	}{
		{"a copy inside the batch", append(batch, own), 202, []Table{origin}, evidence{}, "copied when mnt:[9] (id 50) was made", true, 1},
		{"the namespace's own mount", append(batch, own), 205, []Table{origin}, evidence{}, "cannot prove mount 105 was copied", false, 0},
		{"the newest copy, no ledger", append(batch, lastCopy), 205, []Table{origin}, evidence{}, "cannot prove mount 105 was copied", false, 0},
		{"the newest copy, the ledger shows it", append(batch, lastCopy), 205, []Table{origin}, evidence{ledger: ledgerSays}, "the daemon's ledger", true, 0},
		{"still mounted in the origin", batch, 201, []Table{origin}, evidence{ledger: ledgerSays}, "not a leak: proc 0:20 is still mounted in mnt:[1] (id 4) at /proc", false, 0},
		{"the origin itself", batch, 202, []Table{{Ino: 9, ID: 50}}, evidence{}, "is an origin namespace", false, 0},
		{"gone", batch, 299, []Table{origin}, evidence{}, "mount 299 is no longer in mnt:[9]", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := proveLeak(Table{Ino: 9, ID: 50, Mounts: tt.holder}, tt.copyID, tt.origins, tt.ev)
			if tt.proven {
				if err != nil || !strings.Contains(p.String(), tt.want) || len(p.Below) != tt.below {
					t.Fatalf("proof %q, %d below, err %v; want %q, %d below", p, len(p.Below), err, tt.want, tt.below)
				}
				return
			}
			if !IsNotLeak(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want a refusal with %q", err, tt.want)
			}
		})
	}
}

// A busy copy is still mounted where it came from (its unmount failed):
// it is released only with the failed unmount the daemon kept, and only a
// copy that receives propagation from that very mount.
func TestProveBusyCopy(t *testing.T) {
	vol := Mount{ID: 102, OldID: 22, Dev: event.MakeDev(7, 0), Point: "/srv/vol", Root: "/", FSType: "ext4", Peer: 5}
	origin := Table{Ino: 1, ID: 4, Mounts: []Mount{vol}}
	slave := Mount{ID: 202, OldID: 40, Dev: event.MakeDev(7, 0), Point: "/srv/vol", Root: "/", FSType: "ext4", Master: 5}
	private := slave
	private.Master = 0
	for _, tt := range []struct {
		name   string
		copy   Mount
		failed string
		want   string
	}{
		{"kept failure, slave copy", slave, "umount2 by umount[9] EBUSY", "could not unmount /srv/vol because of this copy"},
		{"no kept failure", slave, "", "not a leak: ext4 7:0 is still mounted"},
		{"a private copy", private, "umount2 by umount[9] EBUSY", "not a leak: ext4 7:0 is still mounted"},
	} {
		p, err := proveLeak(Table{Ino: 9, ID: 50, Mounts: []Mount{tt.copy}}, tt.copy.ID, []Table{origin}, evidence{failedUnmount: tt.failed})
		got := p.String()
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSameFS: one device is one filesystem, but every namespace file is
// on nsfs's one device: those are told by their root ("mnt:[N]").
func TestSameFS(t *testing.T) {
	for _, tt := range []struct {
		a, b Mount
		want bool
	}{
		{Mount{Dev: event.MakeDev(7, 0), FSType: "ext4", Root: "/"}, Mount{Dev: event.MakeDev(7, 0), FSType: "ext4", Root: "/sub"}, true},
		{Mount{Dev: event.MakeDev(7, 0), FSType: "ext4"}, Mount{Dev: event.MakeDev(7, 1), FSType: "ext4"}, false},
		{Mount{Dev: event.MakeDev(0, 4), FSType: "nsfs", Root: "mnt:[9]"}, Mount{Dev: event.MakeDev(0, 4), FSType: "nsfs", Root: "mnt:[9]"}, true},
		{Mount{Dev: event.MakeDev(0, 4), FSType: "nsfs", Root: "mnt:[9]"}, Mount{Dev: event.MakeDev(0, 4), FSType: "nsfs", Root: "net:[10]"}, false},
	} {
		if got := sameFS(tt.a, tt.b); got != tt.want {
			t.Errorf("sameFS(%+v, %+v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestProofString: the evidence in one line, and the mounts detached with
// the copy only when there are some.
func TestProofString(t *testing.T) {
	p := Proof{Gone: "ext4 7:0 is mounted in none of mnt:[1]", Received: "copied"}
	if got, want := p.String(), "ext4 7:0 is mounted in none of mnt:[1]; copied"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	p.Below = []Mount{{Point: "/srv/vol/a"}, {Point: "/srv/vol/b"}}
	if got, want := p.String(), "ext4 7:0 is mounted in none of mnt:[1]; copied; detaches with it 2 mount(s) below: /srv/vol/a, /srv/vol/b"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
