package bench

import (
	"context"
	"fmt"
)

// Variant is one of the set-ups a workload is measured under.
type Variant string

// The variants: A, the floor, B and C.
const (
	NoTracer Variant = "none"
	Floor    Variant = "empty-bpf"
	// FloorEntry adds an empty program on raw sys_enter: the floor of a
	// design that hooks syscall entry too (only the null loop runs it).
	FloorEntry Variant = "empty-bpf+enter"
	Mntleak    Variant = "mntleak"
	Bpftrace   Variant = "bpftrace"
)

// tracer is a running variant; stop detaches it.
type tracer interface {
	stop() error
}

type noTracer struct{}

func (noTracer) stop() error { return nil }

// daemonTracer adapts a Daemon.
type daemonTracer struct{ d *Daemon }

func (t daemonTracer) stop() error { return t.d.Stop() }

// startVariant attaches variant v for one round.
func (r *Runner) startVariant(ctx context.Context, v Variant) (tracer, error) {
	switch v {
	case NoTracer:
		return noTracer{}, nil
	case Floor:
		return attachFloor("sys_exit")
	case FloorEntry:
		return attachFloor("sys_enter", "sys_exit")
	case Mntleak:
		d, err := StartDaemon(ctx, DaemonOptions{Binary: r.cfg.Mntleak, LogFile: r.logPath("daemon-round.log")})
		if err != nil {
			return nil, err
		}
		return daemonTracer{d}, nil
	case Bpftrace:
		return startBpftrace(ctx, r.logPath("bpftrace-round.log"))
	}
	return nil, fmt.Errorf("unknown variant %q", v)
}

// daemonPID is the pid of the mntleak daemon of the variant being
// measured, 0 under any other.
func (r *Runner) daemonPID() int {
	if t, ok := r.running.(daemonTracer); ok {
		return t.d.PID()
	}
	return 0
}

// samples holds one workload's measurements per variant.
type samples map[Variant][]float64

// interleave runs measure under every variant, rounds times, rotating the
// order each round; measure returns one sample (lower is better).
func (r *Runner) interleave(ctx context.Context, name string, variants []Variant, rounds int,
	measure func(ctx context.Context, v Variant) (float64, error)) (samples, error) {
	out := samples{}
	for round := 0; round < rounds; round++ {
		for _, v := range rotate(variants, round) {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			t, err := r.startVariant(ctx, v)
			if err != nil {
				return out, fmt.Errorf("%s round %d: %s: %w", name, round, v, err)
			}
			r.running = t
			x, err := measure(ctx, v)
			r.running = nil
			if serr := t.stop(); err == nil && serr != nil {
				err = fmt.Errorf("stop %s: %w", v, serr)
			}
			if err != nil {
				return out, fmt.Errorf("%s round %d under %s: %w", name, round, v, err)
			}
			out[v] = append(out[v], x)
			r.logf("  %s round %d %-9s %.4g", name, round, v, x)
		}
	}
	return out, nil
}
