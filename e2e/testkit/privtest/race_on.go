//go:build race

package privtest

// raceEnabled: the test binary runs under the race detector, so the
// mntleak binary the tests start is built with it too.
const raceEnabled = true
