package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

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

// results are the measures of every round: ns[variant][workload][round],
// and the events each mntleak variant lost, summed over its rounds.
type results struct {
	ns   map[string][][]float64
	lost map[string]float64
}

func run(mntleak string, rounds int) error {
	runtime.LockOSThread()
	dir, err := os.MkdirTemp("/dev/shm", "hookbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	vs := variants(mntleak)
	res := results{ns: map[string][][]float64{}, lost: map[string]float64{}}
	for _, v := range vs {
		res.ns[v.name] = make([][]float64, len(workloads))
	}
	for r := range rounds {
		for i := range vs {
			if err := round(vs[(i+r)%len(vs)], r, dir, &res); err != nil {
				return err
			}
		}
	}
	summary(vs, &res)
	if n := res.lost["tracepoint"] + res.lost["trampoline"]; n > 0 {
		return fmt.Errorf("mntleak lost %.0f events (tracepoint %.0f, trampoline %.0f): the storm's target is none",
			n, res.lost["tracepoint"], res.lost["trampoline"])
	}
	return nil
}

// round starts v, runs every workload once under it, reads what it lost
// and stops it.
func round(v variant, r int, dir string, res *results) error {
	begin := time.Now()
	t, err := v.start()
	if err != nil {
		return fmt.Errorf("round %d: %s: %w", r+1, v.name, err)
	}
	fmt.Printf("round %d %s: started in %v\n", r+1, v.name, time.Since(begin).Round(time.Millisecond))
	for wi, w := range workloads {
		x, err := measure(w, dir)
		if err != nil {
			_ = t.stop()
			return fmt.Errorf("round %d under %s: %w", r+1, v.name, err)
		}
		fmt.Printf("round %d %s: %s %.0f ns\n", r+1, v.name, w.name, x)
		res.ns[v.name][wi] = append(res.ns[v.name][wi], x)
	}
	if t.lost != nil {
		n, err := t.lost()
		if err != nil {
			_ = t.stop()
			return fmt.Errorf("round %d under %s: %w", r+1, v.name, err)
		}
		fmt.Printf("round %d %s: %.0f events lost\n", r+1, v.name, n)
		res.lost[v.name] += n
	}
	if err := t.stop(); err != nil {
		return fmt.Errorf("round %d: stop %s: %w", r+1, v.name, err)
	}
	return nil
}

// summary prints, per workload, each variant's median and its ratio to no
// tracer's median, with the spread: the lowest and highest of the rounds'
// own ratios (each round's variant against that round's no tracer).
func summary(vs []variant, res *results) {
	fmt.Println("summary: median ns per operation (ratio of medians to none; rounds' own ratios min-max)")
	for wi, w := range workloads {
		none := res.ns["none"][wi]
		base := median(none)
		var parts []string
		for _, v := range vs {
			xs := res.ns[v.name][wi]
			lo, hi := spread(xs, none)
			parts = append(parts, fmt.Sprintf("%s %.0f ns (x%.3f; %.3f-%.3f)", v.name, median(xs), median(xs)/base, lo, hi))
		}
		fmt.Printf("%s: %s\n", w.name, strings.Join(parts, ", "))
	}
	for _, v := range vs {
		if _, ok := res.lost[v.name]; ok {
			fmt.Printf("lost events under %s: %.0f\n", v.name, res.lost[v.name])
		}
	}
}

// spread is the lowest and highest ratio xs[r]/none[r] over the rounds.
func spread(xs, none []float64) (lo, hi float64) {
	for r := range min(len(xs), len(none)) {
		x := xs[r] / none[r]
		if r == 0 || x < lo {
			lo = x
		}
		if r == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
