package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mntleak/mntleak/bench"
)

// variant is one set-up the workloads run under.
type variant struct {
	name  string
	start func() (running, error)
}

// running is a started variant: its stop, and for mntleak the events it
// has lost so far (nil otherwise).
type running struct {
	stop func() error
	lost func() (float64, error)
}

// variants: no tracer; the floor of the tracepoint path (bench's empty
// program on raw sys_exit: what every syscall pays once anything hooks
// it); mntleak on each hook path; and bpftrace with bench's probe set
// when the guest has it.
func variants(mntleak string) []variant {
	vs := []variant{
		{"none", func() (running, error) { return running{stop: func() error { return nil }}, nil }},
		{"empty-bpf", func() (running, error) {
			stop, err := bench.AttachFloor()
			return running{stop: stop}, err
		}},
		{"tracepoint", func() (running, error) { return startMntleak(mntleak, "tracepoint") }},
		{"trampoline", func() (running, error) { return startMntleak(mntleak, "trampoline") }},
	}
	if _, err := exec.LookPath("bpftrace"); err != nil {
		fmt.Printf("bpftrace: not in the guest (%v): left out\n", err)
		return vs
	}
	return append(vs, variant{"bpftrace", func() (running, error) {
		// Under TCG bpftrace compiles its script for minutes.
		stop, err := bench.StartBpftrace(context.Background(), "/dev/shm/hookbench-bpftrace.log", 20*time.Minute)
		return running{stop: stop}, err
	}})
}

// startMntleak runs mntleak trace on path hooks, serving its metrics on a
// free loopback port, and waits for its "tracing" line (no limit: the
// trampoline path takes minutes under TCG on a loaded host).
func startMntleak(mntleak, hooks string) (running, error) {
	addr, err := freeAddr()
	if err != nil {
		return running{}, err
	}
	cmd := exec.Command(mntleak, "trace", "--hooks="+hooks, "--format=json", "--output=/dev/null",
		"--journald=off", "--state-dir=", "--k8s-events=false", "--log-format=json", "--log-level=info",
		"--metrics-addr", addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return running{}, err
	}
	if err := cmd.Start(); err != nil {
		return running{}, fmt.Errorf("start %s: %w", mntleak, err)
	}
	sc := bufio.NewScanner(stderr)
	ready := false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"msg":"BPF programs attached"`) {
			fmt.Println(line)
		}
		if strings.Contains(line, `"msg":"tracing"`) {
			ready = true
			break
		}
	}
	if !ready {
		_ = cmd.Wait()
		return running{}, fmt.Errorf("mntleak trace --hooks=%s ended before tracing", hooks)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("mntleak trace --hooks=%s: %w", hooks, err)
		}
		return nil
	}
	return running{stop: stop, lost: func() (float64, error) { return bench.LostEvents(addr) }}, nil
}

// freeAddr is a loopback host:port nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick a metrics port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
