// Package output writes events as JSON lines or one readable line each, to
// stdout and to record files. Writes are buffered and flushed on a short
// timer, so a storm of events costs one write(2) per batch, not per event.
package output
