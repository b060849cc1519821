package attribution

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestRecordReplay(t *testing.T) {
	web := Container{ID: "c1", Runtime: "docker", Name: "web", Image: "busybox"}
	srcs := []Source{
		&countingSource{name: "docker", containers: map[string]Container{"c1": web}, pods: map[string]Pod{"u1": {UID: "u1", Name: "p", Namespace: "n"}}},
	}
	var lines [][]byte
	rec := Recorder{Lookup: NewResolver(Options{}, srcs...), Write: func(r *Record) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}}
	blocked := Recorder{Lookup: NewResolver(Options{Timeout: 10 * time.Millisecond}, &countingSource{name: "cri", block: true}), Write: rec.Write}
	ctx := context.Background()
	type answer struct {
		c   Container
		err error
	}
	var live []answer
	for _, q := range []struct {
		l  Lookup
		id string
	}{{rec, "c1"}, {rec, "c2"}, {blocked, "c3"}, {rec, "c1"}} {
		c, err := q.l.Container(ctx, q.id)
		live = append(live, answer{c, err})
	}
	pod, podErr := rec.Pod(ctx, "u1")

	r := NewReplay()
	r.Add(&Record{Op: OpSettings, Node: "node-1", KubeletRoot: "/var/lib/kubelet"})
	r.Add(&Record{Op: OpSkip, Key: "3", Err: "queue full"})
	for _, b := range lines {
		var got Record
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Valid() {
			t.Fatalf("recorded an invalid op: %s", b)
		}
		r.Add(&got)
	}
	for i, id := range []string{"c1", "c2", "c3", "c1"} {
		c, err := r.Container(ctx, id)
		w := live[i]
		if c != w.c || (err == nil) != (w.err == nil) || (err != nil && err.Error() != w.err.Error()) {
			t.Errorf("replayed %s: %+v, %v; live %+v, %v", id, c, err, w.c, w.err)
		}
		for _, kind := range []error{ErrNotFound, context.DeadlineExceeded} {
			if errors.Is(err, kind) != errors.Is(w.err, kind) {
				t.Errorf("replayed %s: errors.Is(%v) differs from the live answer's", id, kind)
			}
		}
	}
	if p, err := r.Pod(ctx, "u1"); p != pod || err != podErr {
		t.Errorf("replayed pod: %+v, %v; live %+v, %v", p, err, pod, podErr)
	}
	// Asked more often than recorded: the last answer again.
	if c, err := r.Container(ctx, "c1"); err != nil || c != web {
		t.Errorf("an extra question: %+v, %v", c, err)
	}
	if _, err := r.Container(ctx, "never"); err == nil {
		t.Errorf("an unrecorded question was answered")
	}
	if node, root, ok := r.Settings(); !ok || node != "node-1" || root != "/var/lib/kubelet" {
		t.Errorf("settings %q %q %v", node, root, ok)
	}
	if why, ok := r.Skipped(3); !ok || why != "queue full" {
		t.Errorf("skip of finding 3: %q %v", why, ok)
	}
	if _, ok := r.Skipped(1); ok {
		t.Errorf("finding 1 was not skipped")
	}
}
