// Package findingset checks that a test got exactly the findings it must:
// the complete set of findings about the test's objects, each whole (its
// kind and call, cause, the process named with its role and namespace,
// the event that made the namespace or that it is inferred, and every pid
// its fix names). The privileged suites that build a situation for real
// (variants, the QEMU lab, the Kubernetes node's kubee2e) share it, so a
// test that gets one wrong or one extra finding fails the same way in
// each. Only for tests.
//
// Use: findingset.Exact(t, got, want) with got the findings about the
// test's objects (Objects.Of picks them by path, device and holder
// namespace; a test that knows its objects otherwise picks them itself);
// a namespace is told by its birth id (BirthID, read while a process of
// it runs: Objects.IDs, Want.NSID) where the finding names one too, by its
// inode otherwise: packages run side by side, and the kernel gives a freed
// inode to another package's namespace at once;
// Remote for findings made on another machine (the lab's guest: its pids
// are not this machine's processes).
//
// Files:
//   - findingset.go: Objects, SameNS, BirthID, Want, Exact, Expect,
//     FixPIDs, CreatedBy, Cites.
//   - findingset_test.go: each check fails on the finding it must refuse.
package findingset
