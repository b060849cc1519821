// Package stream reads and writes mntleak's recorded streams: JSON lines
// that are either an event (as `mntleak trace` prints them), a /proc
// answer the correlator used ({"proc": {...}}), or an answer a container
// runtime gave about a finding's processes ({"attribution": {...}}), or
// the kernel's word that a mount was attached to or detached from a
// watched namespace ({"mount_note": {...}}). A replay of the stream gives
// the correlator the same events and the same answers, so it reaches the
// same findings.
//
// Files: stream.go (Read, Item, ProcLine, AttributionLine, NoteLine, TruncatedError).
package stream
