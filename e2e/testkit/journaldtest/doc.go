// Package journaldtest runs a systemd-journald of a test's own: a journal
// namespace (systemd-journald NAME), listening at
// /run/systemd/journal.NAME/socket and read with journalctl
// --namespace=NAME, so that tests never touch the host's journal, nor each
// other's when packages run in parallel.
//
// A namespace's journald exits by itself after 30 s idle with no stream
// client; the test's journal keeps one connected, so it stays up however
// long a test is silent.
//
// Files: journaldtest.go (Start, the namespace's journald and its stream
// client; Restart, Stop, Pause, Resume; Entries, what journalctl reads
// back); journaldtest_privileged_test.go (TestJournalOutlivesTheIdleExit).
package journaldtest
