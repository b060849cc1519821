package release

import (
	"github.com/mntleak/mntleak/internal/kmount"
)

// Mount is one mount as statmount describes it: identities the kernel
// never reuses (ID, Parent, NS) beside the ones it does (OldID, the id
// /proc/PID/mountinfo shows). The kernel's interfaces are package
// kmount's.
type Mount = kmount.Mount

// nsIDOf is the birth id of the mount namespace whose nsfs file fd is.
func nsIDOf(fd int) (uint64, error) { return kmount.NSID(fd) }

// readTable is every mount of namespace ns, in unique-id order.
func readTable(ns uint64) ([]Mount, error) { return kmount.Table(ns) }
