// Package logkey holds every zap field key mntleak logs with, so that the
// keys stay consistent across packages and are easy to query in journald or
// a log pipeline.
package logkey

// Field keys.
const (
	Error        = "error"
	Program      = "program"
	Attach       = "attach"
	Kind         = "kind"
	Lost         = "lost"
	LostTotal    = "lost_total"
	Received     = "received"
	DecodeErrors = "decode_errors"
	RingBufBytes = "ringbuf_bytes"
	Tracefs      = "tracefs"
	Verifier     = "verifier_log"
	Record       = "record"
	Format       = "format"
	Filter       = "filter"
	Attached     = "attached"
	Elapsed      = "elapsed"
	Signal       = "signal"
)
