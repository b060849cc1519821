// Package output writes events as JSON lines or one readable line each, to
// stdout, --output files and record files; for a person at a terminal
// (Human), findings in their short form (finding.Block) and no event
// unless asked. Each Writer has a bounded queue
// (in bytes) drained by a goroutine of its own: the caller, the ring-buffer
// reader, never waits for a slow or stuck destination. A line the queue has
// no room for is dropped and counted, and a lost line marks the gap in the
// stream; findings are never dropped. The drain writes one batch per
// write(2), at least every FlushInterval. File writers reopen their path
// on request (logrotate), and Close gives up on a stuck destination after
// a time limit, so that a daemon told to stop does stop.
//
// Files: writer.go (the event stream and record writers, reopen),
// queue.go (the bounded queue and its drain), lines.go (the log's queue in
// front of stderr), finding.go (a finding's log level, fields (its headline among them, the
// journal's MESSAGE), its JSON, line or short form, and a person's note),
// podfields.go (its fields in pod terms).
package output
