// Package findinglog reads the daemon's JSON log back, for tests that run
// the real daemon (a process, a container, a pod) and check its findings:
// one type with the finding's fields under their log keys
// (internal/logkey), and the parsing every such test needs. Not for
// programs: a log line is for people and journald; a finding's data is
// finding.Finding (its JSON is the line's detail).
//
// Files:
//   - line.go: Line, Parse, Findings.
package findinglog
