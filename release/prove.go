package release

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Table is one namespace's mounts, read from the kernel (listmount and
// statmount by its birth id), in unique-id order.
type Table struct {
	Ino    uint32 // mnt:[Ino]; reused once the namespace is gone
	ID     uint64 // NS_GET_MNTNS_ID: never reused while the machine runs
	Mounts []Mount
}

func (t Table) String() string {
	return "mnt:[" + strconv.FormatUint(uint64(t.Ino), 10) + "] (id " + strconv.FormatUint(t.ID, 10) + ")"
}

// byID is the mount with unique id id, or nil.
func (t Table) byID(id uint64) *Mount {
	for i := range t.Mounts {
		if t.Mounts[i].ID == id {
			return &t.Mounts[i]
		}
	}
	return nil
}

// oldest is the smallest unique id in the table: the first mount the
// kernel made for the namespace (the copy of its origin's root, for a
// namespace made by unshare or clone).
func (t Table) oldest() uint64 {
	if len(t.Mounts) == 0 {
		return 0
	}
	return t.Mounts[0].ID
}

// evidence is what the daemon recorded: its ledger's account of how a
// namespace got a mount, and the failed unmount a busy-copy finding kept
// in its state dir reports ("" for none).
type evidence struct {
	ledger        func(Mount) (string, bool)
	failedUnmount string
}

// NotLeak is a refusal --force never overrides: the copy was not proven
// to be a leak.
type NotLeak struct{ Reason string }

func (e *NotLeak) Error() string { return e.Reason }

// Proof is why a copy is a leak, from live kernel state (and the daemon's
// ledger when the tables alone cannot tell).
type Proof struct {
	Copy  Mount   // the copy, by unique id
	Below []Mount // mounts under it in the holder: detached with it
	// Gone says the filesystem is mounted in none of the origins.
	Gone string
	// Received says how the holder got the copy (not made there).
	Received string
}

// String is the evidence in one line.
func (p Proof) String() string {
	s := p.Gone + "; " + p.Received
	if len(p.Below) > 0 {
		var at []string
		for _, m := range p.Below {
			at = append(at, m.Point)
		}
		s += "; detaches with it " + strconv.Itoa(len(p.Below)) + " mount(s) below: " + strings.Join(at, ", ")
	}
	return s
}

// sameFS reports whether two mounts show the same filesystem: one device,
// and for nsfs (every namespace file is on one device) the same file.
func sameFS(a, b Mount) bool {
	return a.Dev == b.Dev && (a.FSType != "nsfs" || a.Root == b.Root)
}

// proveLeak proves from the tables that mount copy of holder is a leaked
// copy: its filesystem is mounted in none of origins, and the holder
// received it (it was there when the namespace was made) rather than made
// it. received is the ledger's account when the tables cannot show it
// ("" for none). Everything else is a *NotLeak.
func proveLeak(holder Table, copyID uint64, origins []Table, ev evidence) (Proof, error) {
	m := holder.byID(copyID)
	if m == nil {
		return Proof{}, &NotLeak{fmt.Sprintf("mount %d is no longer in %s", copyID, holder)}
	}
	p := Proof{Copy: *m, Below: below(holder, m.ID)}
	var where []string
	busy := ""
	for _, o := range origins {
		if o.ID == holder.ID {
			return Proof{}, &NotLeak{fmt.Sprintf("%s is an origin namespace (the host's or the caller's), never acted in", holder)}
		}
		for _, om := range o.Mounts {
			if sameFS(om, *m) && ev.failedUnmount != "" && om.Point == m.Point && m.Master != 0 && m.Master == om.Peer {
				busy = fmt.Sprintf("%s could not unmount %s because of this copy (%s); the copy receives propagation from its mount %d there (peer group %d)",
					o, om.Point, ev.failedUnmount, om.OldID, om.Peer)
				continue
			}
			if sameFS(om, *m) {
				return Proof{}, &NotLeak{fmt.Sprintf("not a leak: %s %s is still mounted in %s at %s (mount %d)", m.FSType, m.Dev, o, om.Point, om.OldID)}
			}
		}
		where = append(where, o.String())
	}
	p.Gone = fmt.Sprintf("%s %s is mounted in none of %s", m.FSType, m.Dev, strings.Join(where, ", "))
	if busy != "" {
		p.Gone, p.Received = busy, "a propagated copy, not one the namespace made"
		return p, nil
	}
	if w, ok := copiedWitness(holder, *m, origins); ok {
		p.Received = w
		return p, nil
	}
	lacks := "no daemon ledger (--state-dir)"
	if ev.ledger != nil {
		why, ok := ev.ledger(*m)
		if ok {
			p.Received = why
			return p, nil
		}
		lacks = why
	}
	return Proof{}, &NotLeak{fmt.Sprintf("cannot prove mount %d was copied into %s rather than made there: no newer mount of the namespace (than unique id %d) is a copy of one its origin still has, and %s",
		m.OldID, holder, m.ID, lacks)}
}

// copiedWitness proves m was in the namespace's first batch of mounts:
// unshare and clone copy the origin's whole tree at once, in one pass, and
// every mount made or received afterwards gets a newer unique id. A mount
// of the holder newer than m that is the copy of a mount the origin had
// before the holder was made (same filesystem, root and mount point, an
// older unique id than the holder's oldest) was in that batch, so m was
// too.
func copiedWitness(holder Table, m Mount, origins []Table) (string, bool) {
	first := holder.oldest()
	for _, x := range holder.Mounts {
		if x.ID <= m.ID {
			continue
		}
		for _, o := range origins {
			for _, y := range o.Mounts {
				if y.ID < first && sameFS(x, y) && x.Root == y.Root && x.Point == y.Point {
					return fmt.Sprintf("copied when %s was made: mount %d (unique %d) is older than its copy of %s (unique %d), which %s had before (unique %d < %d, the namespace's oldest)",
						holder, m.OldID, m.ID, x.Point, x.ID, o, y.ID, first), true
				}
			}
		}
	}
	return "", false
}

// below is every mount under the one with unique id top (children,
// their children, ...).
func below(t Table, top uint64) []Mount {
	under := map[uint64]bool{top: true}
	var out []Mount
	for changed := true; changed; {
		changed = false
		for _, m := range t.Mounts {
			if !under[m.ID] && under[m.Parent] {
				under[m.ID], changed = true, true
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b Mount) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
