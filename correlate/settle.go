package correlate

import (
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// pendingLeak is a leak found at an unmount, reported once the teardown
// has settled if a copy is still there.
type pendingLeak struct {
	ev       *event.Event // the unmount
	obj      finding.Object
	id       identity
	matches  []match  // the copies found right after the unmount
	missing  []string // what could not be read then
	deadline time.Time
	detached bool // a copy of it was detached since it was found (dropDetached, mountnotes.go)
	unsure   bool // the last confirmLeak that found nothing could not read a table it asked for
}

// settleLeaks confirms the pending leaks whose teardown has settled (their
// deadline passed, in event time), or all of them (Flush, at the end). A
// failure on the object of a pending leak confirms it at once (failed):
// the failure shows the object is held, and the leak is what explains it.
func (c *Correlator) settleLeaks(failed func(identity) bool, all bool) {
	if len(c.pending) == 0 {
		return
	}
	var keep []*pendingLeak
	var confirmed []*leakRecord
	for _, p := range c.pending {
		switch hit := failed != nil && failed(p.id); {
		case hit || all || !c.now.Before(p.deadline):
			if rec := c.confirmLeak(p, true, hit); rec != nil {
				confirmed = append(confirmed, rec)
			}
		default:
			keep = append(keep, p)
		}
	}
	c.pending = keep
	c.keepLeaks(confirmed)
}

// joinTeardown makes p's teardown settle together: a leak still pending
// from an earlier unmount by the same namespace, whose copies stayed in
// the same holder namespaces, waits until p's deadline too (a teardown
// settles 2 s after its last unmount), so that one pass confirms them all
// and keepLeaks reports them as one finding. Before, an event that came
// between the two deadlines split a pod's teardown in two findings. A
// deadline moves at most one settle window past its own unmount's.
func (c *Correlator) joinTeardown(p *pendingLeak) {
	for _, q := range c.pending {
		if q.ev.MntNS != p.ev.MntNS || !sameHolderNamespaces(q.matches, p.matches) {
			continue
		}
		limit := q.ev.Time.Add(2 * c.opts.LeakSettle)
		if p.deadline.After(q.deadline) && !p.deadline.After(limit) {
			q.deadline = p.deadline
		}
	}
}

// sameHolderNamespaces reports whether two unmounts' copies are in the
// same namespaces.
func sameHolderNamespaces(a, b []match) bool {
	in := func(ms []match) map[uint32]bool {
		set := map[uint32]bool{}
		for _, m := range ms {
			if m.ns != nil {
				set[m.ns.Ino] = true
			}
		}
		return set
	}
	x, y := in(a), in(b)
	if len(x) != len(y) {
		return false
	}
	for ns := range x {
		if !y[ns] {
			return false
		}
	}
	return true
}

// keepLeaks reports the leaks confirmed together, one finding per
// teardown and holder: the leaks one namespace's unmounts left in the same
// holder namespaces (a pod's rootfs, shm, netns, volumes) are one finding
// that names every object it keeps (Finding.Others). Each object still
// has its record, so a failure on any of them links to that finding.
//
// The finding leads with the object the user cares about (objectRank): a
// pod's volume, then a container's rootfs, then the runtime's own (the
// sandbox's shm, a netns file), whatever order the unmounts came in.
func (c *Correlator) keepLeaks(recs []*leakRecord) {
	done := make([]bool, len(recs))
	for i, rec := range recs {
		if done[i] {
			continue
		}
		group := []*leakRecord{rec}
		for j := i + 1; j < len(recs); j++ {
			if other := recs[j]; !done[j] && sameTeardown(rec, other) {
				done[j] = true
				group = append(group, other)
			}
		}
		lead := 0
		for k, r := range group {
			if objectRank(r.finding.Object.Path) < objectRank(group[lead].finding.Object.Path) {
				lead = k
			}
		}
		group[0], group[lead] = group[lead], group[0]
		rest := group[1:]
		sort.SliceStable(rest, func(a, b int) bool {
			return objectRank(rest[a].finding.Object.Path) < objectRank(rest[b].finding.Object.Path)
		})
		f := group[0].finding
		for _, other := range rest {
			f.Others = append(f.Others, other.finding.Object)
			other.finding = f
			c.leaks = append(c.leaks, other)
		}
		c.keepLeak(group[0])
	}
}

// objectRank orders the objects of one teardown as the user cares about
// them: 0 a pod's volume (<kubelet root>/pods/<uid>/volumes/...), 1 any
// other volume, 2 a container's root filesystem (.../rootfs, docker's
// .../merged), 3 the runtime's internals (the sandbox's shm, netns files,
// the runtimes' state directories).
func objectRank(path string) int {
	switch {
	case podVolumePath.MatchString(path):
		return 0
	case strings.HasSuffix(path, "/rootfs") || strings.HasSuffix(path, "/merged"):
		return 2
	case strings.HasSuffix(path, "/shm") || strings.Contains(path, "/netns/") ||
		strings.HasPrefix(path, "/run/containerd/") || strings.HasPrefix(path, "/run/docker/"):
		return 3
	}
	return 1
}

// podVolumePath is a path in a pod's volume, under any kubelet root.
var podVolumePath = regexp.MustCompile(`/pods/[0-9a-f-]{36}/volumes/[^/]+/[^/]+`)

// sameTeardown reports whether two confirmed leaks come from one teardown:
// unmounts in the same namespace whose copies stayed in the same holder
// namespaces.
func sameTeardown(a, b *leakRecord) bool {
	if a.finding.Call.MntNS != b.finding.Call.MntNS || len(a.holders) != len(b.holders) {
		return false
	}
	for ns := range a.holders {
		if !b.holders[ns] {
			return false
		}
	}
	return true
}

// Flush reports the leaks still waiting for their teardown to settle, as
// they stand now: call it when the events end (the daemon stops, a replay
// reaches the end of its recording).
func (c *Correlator) Flush() { c.settleLeaks(nil, true) }

// sameObject reports whether two identities are the same object (as a
// failure and an earlier leak are matched).
func sameObject(a, b identity) bool {
	return (a.known() && b.dev == a.dev && (a.block || b.root == a.root)) || (a.path != "" && b.path == a.path)
}
