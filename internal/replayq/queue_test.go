package replayq

import "testing"

func TestQueue(t *testing.T) {
	q := New[int]()
	if _, err := q.Next("a"); err == nil || err.Error() != "replay: no recorded answer for a" {
		t.Fatalf("no answer: %v", err)
	}
	q.Add("a", 1)
	q.Add("a", 2)
	q.Add("b", 9)
	for _, want := range []int{1, 2, 2, 2} { // then the last again
		if got, err := q.Next("a"); err != nil || got != want {
			t.Fatalf("Next(a) = %d, %v; want %d", got, err, want)
		}
	}
	q.Add("b", 10)
	q.Drop("b") // a newer step answers b: the older answers go
	q.Add("b", 11)
	if got, _ := q.Next("b"); got != 11 {
		t.Errorf("after Drop: %d, want 11", got)
	}
	q.Drop("b")
	if got, err := q.Next("b"); err != nil || got != 11 {
		t.Errorf("after Drop of an empty queue: %d, %v; want the last, 11", got, err)
	}
}
