package attribution

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// countingSource is a Source over a fixed table that counts what it is
// asked; block makes it wait for the context instead of answering.
type countingSource struct {
	name       string
	containers map[string]Container
	pods       map[string]Pod
	err        error // returned for every question when set
	block      bool

	mu    sync.Mutex
	asked map[string]int
}

func (s *countingSource) Name() string { return s.name }

func (s *countingSource) count(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == nil {
		s.asked = map[string]int{}
	}
	s.asked[k]++
}

func (s *countingSource) times(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[k]
}

func (s *countingSource) Container(ctx context.Context, id string) (Container, error) {
	s.count(id)
	if s.block {
		<-ctx.Done()
		return Container{}, ctx.Err()
	}
	if s.err != nil {
		return Container{}, s.err
	}
	c, ok := s.containers[id]
	if !ok {
		return Container{}, ErrNotFound
	}
	return c, nil
}

func (s *countingSource) Pod(ctx context.Context, uid string) (Pod, error) {
	s.count(uid)
	if s.err != nil {
		return Pod{}, s.err
	}
	p, ok := s.pods[uid]
	if !ok {
		return Pod{}, ErrNotFound
	}
	return p, nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestResolverCaches(t *testing.T) {
	web := Container{ID: "c1", Runtime: "docker", Name: "web", Image: "busybox"}
	exporter := Container{ID: "c2", Runtime: "cri", Name: "node-exporter", Pod: "node-exporter-x2x", Namespace: "monitoring", PodUID: "u2", PodContainer: "node-exporter"}
	tests := []struct {
		name    string
		sources func() []*countingSource
		// asks: container ids asked in order, with the clock advanced by
		// the step before each.
		asks []ask
	}{
		{"an answer is cached", func() []*countingSource {
			return []*countingSource{{name: "docker", containers: map[string]Container{"c1": web}}}
		}, []ask{
			{id: "c1", want: web, asked: []int{1}},
			{id: "c1", want: web, asked: []int{1}},
			{step: time.Hour, id: "c1", want: web, asked: []int{1}},
		}},
		{"sources are asked in order, a miss passes on", func() []*countingSource {
			return []*countingSource{{name: "cri", containers: map[string]Container{"c2": exporter}}, {name: "docker", containers: map[string]Container{"c1": web}}}
		}, []ask{
			{id: "c1", want: web, asked: []int{1, 1}},
			{id: "c2", want: exporter, asked: []int{1, 0}},
		}},
		{"an unavailable source passes on", func() []*countingSource {
			return []*countingSource{{name: "cri", err: fmt.Errorf("dial /run/containerd/containerd.sock: %w", ErrUnavailable)}, {name: "docker", containers: map[string]Container{"c1": web}}}
		}, []ask{{id: "c1", want: web, asked: []int{1, 1}}}},
		{"a miss is remembered for the negative TTL", func() []*countingSource {
			return []*countingSource{{name: "docker"}}
		}, []ask{
			{id: "c9", wantErr: ErrNotFound, asked: []int{1}},
			{step: 29 * time.Second, id: "c9", wantErr: ErrNotFound, asked: []int{1}},
			{step: time.Second, id: "c9", wantErr: ErrNotFound, asked: []int{2}},
		}},
		{"an error is remembered, and named", func() []*countingSource {
			return []*countingSource{{name: "cri", err: errors.New("rpc error: code = Internal")}}
		}, []ask{
			{id: "c1", wantMsg: "container c1: cri: rpc error: code = Internal", asked: []int{1}},
			{id: "c1", wantMsg: "container c1: cri: rpc error: code = Internal", asked: []int{1}},
			{step: 31 * time.Second, id: "c1", wantMsg: "container c1: cri: rpc error: code = Internal", asked: []int{2}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srcs := tt.sources()
			var ss []Source
			for _, s := range srcs {
				ss = append(ss, s)
			}
			clk := &clock{t: time.Unix(1000, 0)}
			r := NewResolver(Options{Now: clk.now}, ss...)
			for i, a := range tt.asks {
				clk.t = clk.t.Add(a.step)
				got, err := r.Container(context.Background(), a.id)
				switch {
				case a.wantErr != nil && !errors.Is(err, a.wantErr):
					t.Fatalf("ask %d: error %v, want %v", i, err, a.wantErr)
				case a.wantMsg != "" && (err == nil || err.Error() != a.wantMsg):
					t.Fatalf("ask %d: error %v, want %q", i, err, a.wantMsg)
				case a.wantErr == nil && a.wantMsg == "" && (err != nil || got != a.want):
					t.Fatalf("ask %d: %+v, %v; want %+v", i, got, err, a.want)
				}
				for j, s := range srcs {
					if n := s.times(a.id); n != a.asked[j] {
						t.Errorf("ask %d: source %s asked %d times about %s, want %d", i, s.name, n, a.id, a.asked[j])
					}
				}
			}
		})
	}
}

type ask struct {
	step    time.Duration
	id      string
	want    Container
	wantErr error
	wantMsg string
	asked   []int // per source, how many times it was asked about id so far
}

func TestResolverTimeout(t *testing.T) {
	src := &countingSource{name: "cri", block: true}
	r := NewResolver(Options{Timeout: 50 * time.Millisecond}, src)
	start := time.Now()
	_, err := r.Container(context.Background(), "c1")
	if !IsTimeout(err) {
		t.Fatalf("error %v, want a deadline exceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v with a 50ms timeout", d)
	}
	if st := r.Stats(); st.Errors != 1 || st.Misses != 1 {
		t.Errorf("stats %+v, want 1 miss, 1 error", st)
	}
	// The caller stopping is not remembered: asked again next time.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Pod(ctx, "u1"); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v", err)
	}
	if src.times("u1") != 0 {
		t.Errorf("a source was asked under a canceled context")
	}
}

func TestResolverPods(t *testing.T) {
	pod := Pod{UID: "u1", Name: "web-7f9c", Namespace: "default", Source: "api"}
	src := &countingSource{name: "api", pods: map[string]Pod{"u1": pod}}
	r := NewResolver(Options{}, src)
	for range 3 {
		if got, err := r.Pod(context.Background(), "u1"); err != nil || got != pod {
			t.Fatalf("Pod: %+v, %v", got, err)
		}
	}
	if n := src.times("u1"); n != 1 {
		t.Errorf("asked %d times, want 1", n)
	}
}

func TestCacheBound(t *testing.T) {
	c := newCache[int](3)
	now := time.Unix(0, 0)
	for i := range 5 {
		c.put(fmt.Sprint(i), entry[int]{val: i})
	}
	if c.len() != 3 {
		t.Fatalf("%d entries, want 3", c.len())
	}
	for i := range 5 {
		_, ok := c.get(fmt.Sprint(i), now)
		if want := i >= 2; ok != want {
			t.Errorf("entry %d present %v, want %v (the oldest go first)", i, ok, want)
		}
	}
	// Expired misses are dropped on read, and the order stays bounded.
	for i := range 100 {
		k := fmt.Sprint("miss", i)
		c.put(k, entry[int]{err: ErrNotFound, expires: now})
		c.get(k, now)
	}
	if len(c.order) > 2*3+1 {
		t.Errorf("order holds %d keys for %d entries", len(c.order), c.len())
	}
}
