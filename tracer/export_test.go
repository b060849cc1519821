package tracer

import "time"

// Hooks for the tests in package tracer_test.

// WithBTFPath makes New read the kernel BTF from path.
func WithBTFPath(cfg Config, path string) Config {
	cfg.btfPath = path
	return cfg
}

// WithBogusSyscall adds a handler for event on a syscall that no kernel
// has (mntleak_bogus_<event>), with a real program (umount's handler) in
// an unused slot.
func WithBogusSyscall(cfg Config, event string, optional bool) Config {
	cfg.extraHandlers = func(o *objects) []handler {
		return []handler{{event: event, syscall: "mntleak_bogus_" + event, slot: 510, optional: optional, prog: o.mount.UmountExit}}
	}
	return cfg
}

// JudgeCapabilities is judgeCapabilities for a CapEff value.
var JudgeCapabilities = judgeCapabilities

// WithoutPeriodicLostCheck leaves only the lost check before each failure
// event (and the last one, when Run returns).
func WithoutPeriodicLostCheck(cfg Config) Config {
	cfg.noPeriodicCheck = true
	return cfg
}

// WithBoundedWalk loads the path walk of kernels without bpf_loop, as New
// would there: no_bpf_loop set and the callback's address removed.
func WithBoundedWalk(cfg Config) Config {
	cfg.boundedWalk = true
	return cfg
}

// ProbeTrampoline is the probe --hooks=auto asks: nil where the kernel
// attaches an fexit program to a syscall function.
var ProbeTrampoline = probeTrampoline

// WithTaskMapEntries bounds task_mntns_map at n entries.
func WithTaskMapEntries(cfg Config, n uint32) Config {
	cfg.taskMapEntries = n
	return cfg
}

// WithClockSkew moves the events' clock d away from the wall clock, as
// NTP moves the wall clock away from the offset measured at the start.
func WithClockSkew(cfg Config, d time.Duration) Config {
	cfg.clockSkew = d
	return cfg
}

// WithoutQuietWake leaves quiet exits (SetQuietExits) to the next record
// that wakes the reader: no periodic wakeup reads them.
func WithoutQuietWake(cfg Config) Config {
	cfg.noQuietWake = true
	return cfg
}

// WithoutLostCheckWakeup is WithoutPeriodicLostCheck, and the reader does
// not wake up for the check either: only records and quiet exits'
// wakeups (SetQuietExits) wake it.
func WithoutLostCheckWakeup(cfg Config) Config {
	cfg.noPeriodicCheck, cfg.noLostWakeup = true, true
	return cfg
}
