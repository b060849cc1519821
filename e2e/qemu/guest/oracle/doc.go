// Command oracle runs in the lab's guest (Debian's 6.1 kernel, real
// systemd): it reads mntleak's journal entries on stdin (journalctl -o
// json -f), and for each finding compares it with the oracle
// (e2e/oracle, through e2e/oraclecheck.Judge) at once, writing one
// oraclecheck.Verdict a line on stdout; the host test reads them back and
// fails on a disagreement. The guest has no namespace walk
// (NS_MNT_GET_NEXT, listmount and statmount came in 6.8–6.12): the oracle
// reads the namespaces of processes, open nsfs fds and nsfs binds, each
// table through a member's mountinfo. A test harness, never shipped.
//
// Files: doc.go; main.go (run: entries in, one verdict a line out);
// main_test.go (it judges every finding, and a finding on a device nothing
// holds is not agreed with).
package main
