//go:build !race

package privtest

const raceEnabled = false
