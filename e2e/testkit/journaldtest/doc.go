// Package journaldtest runs a systemd-journald of a test's own: a journal
// namespace (systemd-journald NAME), listening at
// /run/systemd/journal.NAME/socket and read with journalctl
// --namespace=NAME, so that tests never touch the host's journal, nor each
// other's when packages run in parallel.
//
// Files: journaldtest.go (Start, the namespace's journald; Restart, Stop,
// Pause, Resume; Entries, what journalctl reads back).
package journaldtest
