// Package replayq holds recorded answers for a replay: each question takes
// the next answer recorded for it, and once those are used up the last one
// again (a replaying correlator may ask more often than the recording one
// did: it gets the freshest answer there is). procfs's and attribution's
// replays keep their answers in one.
//
// Files:
//   - queue.go: Queue.
package replayq
