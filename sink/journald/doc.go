// Package journald sends mntleak's log entries to the systemd journal with
// its native protocol (github.com/coreos/go-systemd/v22/journal), as a zap
// core: one entry per finding, MESSAGE the finding's human line, PRIORITY
// err for a failure, warning for a leak and info for lifecycle messages, and
// every zap field as an upper-cased MNTLEAK_ field, so that
//
//	journalctl MNTLEAK_CAUSE=private-tmp -o json
//
// finds them. The core is teed with stderr: if the journal goes away the
// entries still reach stderr, and the loss is logged there, once per
// outage. Entries are sent from a goroutine of the core's own, through
// bounded queues (findings in one of their own, sent first) and with a
// deadline per send: a journald that is stopped or slow never blocks the
// logger's caller; what does not fit is dropped and counted. The socket is
// a parameter (Socket), so that a journal namespace can be the target.
//
// Files: core.go (the zap core: NewCore, its queues and their drops),
// send.go (the native protocol, the socket and the deadline per send).
// The tests use a journald of their own (e2e/testkit/journaldtest).
package journald
