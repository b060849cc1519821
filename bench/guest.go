package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"
)

// What the lab guest's hookbench (e2e/qemu/guest/hookbench) measures
// against, the same as this package's variants: the floor and bpftrace
// with its probe set, and the daemon's lost-event count.

// AttachFloor attaches the Floor variant (the empty program on raw
// sys_exit) and returns its detach.
func AttachFloor() (stop func() error, err error) {
	f, err := attachFloor("sys_exit")
	if err != nil {
		return nil, err
	}
	return f.stop, nil
}

// StartBpftrace starts the Bpftrace variant (bpftraceScript), waiting at
// most attach for its probes (under TCG bpftrace's compile takes far
// longer than the host's 60 s), and returns its stop.
func StartBpftrace(ctx context.Context, logFile string, attach time.Duration) (stop func() error, err error) {
	t, err := startBpftraceWithin(ctx, logFile, attach)
	if err != nil {
		return nil, err
	}
	return t.stop, nil
}

// LostEvents sums mntleak_events_lost_total of the daemon whose metrics
// are served at addr (host:port).
func LostEvents(addr string) (float64, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, fmt.Errorf("metrics at %s: %w", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET /metrics HTTP/1.0\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		return 0, fmt.Errorf("metrics at %s: %w", addr, err)
	}
	m, err := parseMetrics(conn)
	if err != nil {
		return 0, fmt.Errorf("metrics at %s: %w", addr, err)
	}
	return lost(m), nil
}
