package replayq

import "fmt"

// Queue is the answers per question. It is not safe for concurrent use:
// its owner locks.
type Queue[R any] struct {
	queues map[string][]R
	last   map[string]R
}

// New returns an empty Queue.
func New[R any]() *Queue[R] {
	return &Queue[R]{queues: map[string][]R{}, last: map[string]R{}}
}

// Add queues answer r to question k.
func (q *Queue[R]) Add(k string, r R) { q.queues[k] = append(q.queues[k], r) }

// Drop forgets the answers to k still queued (the last one given stays).
func (q *Queue[R]) Drop(k string) { delete(q.queues, k) }

// Next takes the next answer to k; with none queued, the last one given.
func (q *Queue[R]) Next(k string) (R, error) {
	rs := q.queues[k]
	if len(rs) == 0 {
		if last, ok := q.last[k]; ok {
			return last, nil
		}
		var zero R
		return zero, fmt.Errorf("replay: no recorded answer for %s", k)
	}
	q.queues[k] = rs[1:]
	q.last[k] = rs[0]
	return rs[0], nil
}
