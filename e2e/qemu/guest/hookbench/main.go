package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// variants: no tracer, then mntleak on each path.
var variants = []string{"none", "tracepoint", "trampoline"}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: hookbench MNTLEAK ROUNDS")
		os.Exit(2)
	}
	rounds, err := strconv.Atoi(os.Args[2])
	if err != nil || rounds < 1 {
		fmt.Fprintf(os.Stderr, "hookbench: invalid ROUNDS %q\n", os.Args[2])
		os.Exit(2)
	}
	if err := run(os.Args[1], rounds); err != nil {
		fmt.Fprintf(os.Stderr, "hookbench: %v\n", err)
		os.Exit(1)
	}
}

func run(mntleak string, rounds int) error {
	runtime.LockOSThread()
	dir, err := os.MkdirTemp("/dev/shm", "hookbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// ns[variant][workload] are the measures of every round.
	ns := map[string][][]float64{}
	for _, v := range variants {
		ns[v] = make([][]float64, len(workloads))
	}
	for r := range rounds {
		for i := range variants {
			v := variants[(i+r)%len(variants)]
			stop, startup, err := start(mntleak, v)
			if err != nil {
				return err
			}
			fmt.Printf("round %d %s: started in %v\n", r+1, v, startup.Round(time.Millisecond))
			for wi, w := range workloads {
				x, err := measure(w, dir)
				if err != nil {
					stop()
					return err
				}
				ns[v][wi] = append(ns[v][wi], x)
			}
			if err := stop(); err != nil {
				return err
			}
		}
	}
	for wi, w := range workloads {
		base := median(ns["none"][wi])
		var parts []string
		for _, v := range variants {
			m := median(ns[v][wi])
			parts = append(parts, fmt.Sprintf("%s %.0f ns (x%.2f)", v, m, m/base))
		}
		fmt.Printf("%s: %s\n", w.name, strings.Join(parts, ", "))
	}
	return nil
}

// start runs mntleak trace on path v (nothing for "none") and waits for
// its "tracing" line; stop ends it.
func start(mntleak, v string) (stop func() error, startup time.Duration, err error) {
	if v == "none" {
		return func() error { return nil }, 0, nil
	}
	begin := time.Now()
	cmd := exec.Command(mntleak, "trace", "--hooks="+v, "--format=json", "--output=/dev/null",
		"--journald=off", "--state-dir=", "--k8s-events=false", "--log-format=json", "--log-level=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", mntleak, err)
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
		return nil, 0, fmt.Errorf("mntleak trace --hooks=%s ended before tracing", v)
	}
	startup = time.Since(begin)
	go func() {
		for sc.Scan() {
		}
	}()
	return func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("mntleak trace --hooks=%s: %w", v, err)
		}
		return nil
	}, startup, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
