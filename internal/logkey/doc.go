// Package logkey holds every zap field key mntleak logs with, so that the
// keys stay consistent across packages and are easy to query in journald or
// a log pipeline.
//
// Files: keys.go.
package logkey
