package privtest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Recorder is a testing.TB that records what a check reports instead of
// failing the test: a test proves that a check fails on bad input (a
// control's check on a false leak, a golden's expectations on a wrong
// verdict) by running it on a Recorder and requiring that it failed.
type Recorder struct {
	testing.TB // the real test: Cleanup, TempDir, Name, ... go to it
	mu         sync.Mutex
	failed     bool
	reports    []string
}

// Record runs check with a Recorder over t, to its end or its Fatal, and
// returns the Recorder.
func Record(t testing.TB, check func(tb testing.TB)) *Recorder {
	r := &Recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r
}

// Failed reports whether the check failed.
func (r *Recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Reports are the check's errors and logs, in order.
func (r *Recorder) Reports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reports...)
}

func (r *Recorder) report(failed bool, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = r.failed || failed
	r.reports = append(r.reports, s)
}

func (r *Recorder) Helper()                         {}
func (r *Recorder) Log(args ...any)                 { r.report(false, fmt.Sprint(args...)) }
func (r *Recorder) Logf(format string, args ...any) { r.report(false, fmt.Sprintf(format, args...)) }
func (r *Recorder) Error(args ...any)               { r.report(true, fmt.Sprint(args...)) }
func (r *Recorder) Errorf(format string, args ...any) {
	r.report(true, fmt.Sprintf(format, args...))
}
func (r *Recorder) Fail()                     { r.report(true, "Fail") }
func (r *Recorder) FailNow()                  { r.report(true, "FailNow"); runtime.Goexit() }
func (r *Recorder) Fatal(args ...any)         { r.report(true, fmt.Sprint(args...)); runtime.Goexit() }
func (r *Recorder) Fatalf(f string, a ...any) { r.report(true, fmt.Sprintf(f, a...)); runtime.Goexit() }
func (r *Recorder) Skip(args ...any) {
	r.report(true, "skipped: "+fmt.Sprint(args...))
	runtime.Goexit()
}
func (r *Recorder) Skipf(f string, a ...any) {
	r.report(true, "skipped: "+fmt.Sprintf(f, a...))
	runtime.Goexit()
}
func (r *Recorder) SkipNow() { r.report(true, "skipped"); runtime.Goexit() }
