package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// terminal is the other side of a pseudo-terminal: what a person would
// see of what a command writes to its terminal side.
type terminal struct {
	mu   sync.Mutex
	got  bytes.Buffer
	done chan struct{}
	tty  *os.File
}

// openTerminal opens a pseudo-terminal: tty, stdout for the command (which
// term.IsTerminal reports as one; raw, so the bytes read are those
// written), and its screen, read as the command writes. Both sides are
// closed at the test's end.
func openTerminal(t *testing.T) (tty *os.File, screen *terminal) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock %s: %v", ptmx.Name(), err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number of %s: %v", ptmx.Name(), err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	tio.Lflag &^= unix.ECHO | unix.ICANON
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	screen = &terminal{done: make(chan struct{}), tty: tty}
	go func() {
		defer close(screen.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			screen.mu.Lock()
			screen.got.Write(buf[:n])
			screen.mu.Unlock()
			if err != nil { // EIO once the last terminal side is closed
				return
			}
		}
	}()
	return tty, screen
}

// text is what the terminal shows so far.
func (s *terminal) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.String()
}

// wait waits at most d for the screen to hold want.
func (s *terminal) wait(t *testing.T, want string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(s.text(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal does not show %q after %v:\n%s", want, d, s.text())
		}
	}
}

// close closes the terminal side (the command's copy too must be closed
// or gone) and returns all the screen showed.
func (s *terminal) close() string {
	s.tty.Close()
	<-s.done
	return s.text()
}

// TestReplayOnATerminal: on a terminal, replay prints each finding in its
// short form (a headline of at most 160 characters, then its detail lines
// indented), the same recording piped prints JSON, and --format json on a
// terminal prints JSON.
func TestReplayOnATerminal(t *testing.T) {
	stream := filepath.Join("..", "..", "e2e", "scenarios", "seed002-node-exporter", "stream.jsonl")
	tty, screen := openTerminal(t)
	var stderr bytes.Buffer
	if code := run([]string{"replay", stream}, tty, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	text := screen.close()
	t.Logf("the terminal:\n%s", text)
	blocks := strings.Split(strings.TrimSpace(text), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("%d findings on the terminal, want 2", len(blocks))
	}
	for _, b := range blocks {
		lines := strings.Split(b, "\n")
		head := lines[0]
		if utf8.RuneCountInString(head) > finding.HeadlineLimit || !strings.HasSuffix(head, "[cause: rprivate-bind]") ||
			!strings.Contains(head, "held by node_exporter[21413] in mnt:[4026532187]") {
			t.Errorf("headline %q", head)
		}
		labels := []string{}
		for _, l := range lines[1:] {
			label, _, ok := strings.Cut(strings.TrimPrefix(l, "    "), ": ")
			if !strings.HasPrefix(l, "    ") || !ok {
				t.Errorf("detail line not indented or labelled: %q", l)
			}
			labels = append(labels, label)
		}
		if got := strings.Join(labels, " "); !strings.HasPrefix(got, "call holder cause") || !strings.HasSuffix(got, "fix release") {
			t.Errorf("detail lines %s, want call, holder, cause, ..., fix, release", got)
		}
	}

	for _, args := range [][]string{{"replay", stream}, {"replay", "--format", "json", stream}} {
		var out bytes.Buffer
		w := io.Writer(&out)
		if len(args) > 2 {
			tty, screen := openTerminal(t)
			w = tty
			if code := run(args, w, &stderr); code != exitOK {
				t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
			}
			out.WriteString(screen.close())
		} else if code := run(args, w, &stderr); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		for _, l := range lines {
			var f finding.Finding
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Errorf("%v: not JSON: %q", args, l)
			}
		}
		if len(lines) != 2 {
			t.Errorf("%v: %d lines, want 2 findings", args, len(lines))
		}
	}
}

// TestBadFormatOnATerminal: a bad --format or --events is one line on
// stderr and exit status 2, on a terminal as piped.
func TestBadFormatOnATerminal(t *testing.T) {
	for _, args := range [][]string{{"trace", "--format", "yaml"}, {"trace", "--events=often"}, {"replay", "--format", "pretty", "x.jsonl"}} {
		tty, screen := openTerminal(t)
		var stderr bytes.Buffer
		code := run(args, tty, &stderr)
		if out := screen.close(); code != exitUsage || strings.Count(stderr.String(), "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr", args, code, out, stderr.String(), exitUsage)
		}
	}
}
