package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DaemonOptions starts `mntleak trace` as a child.
type DaemonOptions struct {
	Binary string   // path of the mntleak binary
	Args   []string // extra trace flags (--mntns ...)
	// OnEvent, when set, is called with every line the daemon prints on
	// stdout (one event each); otherwise stdout goes to /dev/null.
	OnEvent func(line []byte)
	// LogFile, when set, keeps a copy of the daemon's stderr.
	LogFile string
}

// Finding is one finding line the daemon logged, as the benchmark saw it.
type Finding struct {
	Arrived time.Time // when the line reached the benchmark
	Logged  time.Time // the line's own timestamp: when the daemon logged it (ms)
	Level   string
	Kind    string // failure or leak
	Cause   string
	Path    string
	Call    time.Time // the failing call, as the daemon timed it
	Line    string    // the raw JSON line
}

// Daemon is a running `mntleak trace`.
type Daemon struct {
	cmd     *exec.Cmd
	Metrics string        // host:port of its Prometheus endpoint
	Startup time.Duration // from exec to the "tracing" line
	// StartupCPU is the daemon's user + system CPU time when it logged
	// "tracing": unlike Startup, not stretched by other processes' load.
	StartupCPU time.Duration
	readers    sync.WaitGroup
	mu         sync.Mutex
	findings   []Finding
	exited     chan error
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a metrics port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartDaemon runs the daemon and returns once it logged "tracing": its
// programs are loaded and attached and its first /proc snapshot is taken.
func StartDaemon(ctx context.Context, o DaemonOptions) (*Daemon, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	d := &Daemon{Metrics: "127.0.0.1:" + strconv.Itoa(port), exited: make(chan error, 1)}
	args := append([]string{"trace", "--state-dir", "", "--journald", "off", "--log-format", "json",
		"--metrics-addr", d.Metrics}, o.Args...)
	// Not CommandContext: the daemon is stopped with SIGINT by Stop, which
	// every caller defers; a kill would skip its own cleanup.
	// No Pdeathsig: it fires when the forking OS thread exits, and the
	// workloads end locked threads on purpose (their namespaces go with
	// them); Run stops every child itself.
	d.cmd = exec.Command(o.Binary, args...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	var stdout io.ReadCloser
	if o.OnEvent != nil {
		if stdout, err = d.cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	}
	var logCopy *os.File
	if o.LogFile != "" {
		if logCopy, err = os.Create(o.LogFile); err != nil {
			return nil, fmt.Errorf("daemon log %s: %w", o.LogFile, err)
		}
	}
	ready := make(chan struct{})
	start := time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	d.readers.Add(1)
	go func() {
		defer d.readers.Done()
		if logCopy != nil {
			defer logCopy.Close()
		}
		d.readLog(stderr, logCopy, ready, start)
	}()
	if stdout != nil {
		d.readers.Add(1)
		go func() {
			defer d.readers.Done()
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				o.OnEvent(sc.Bytes())
			}
			_, _ = io.Copy(io.Discard, stdout)
		}()
	}
	go func() {
		d.readers.Wait()
		d.exited <- d.cmd.Wait()
	}()
	select {
	case <-ready:
		return d, nil
	case err := <-d.exited:
		d.exited <- err
		return nil, fmt.Errorf("mntleak trace exited before tracing: %v (see %s)", err, o.LogFile)
	case <-time.After(60 * time.Second):
		d.Stop()
		return nil, errors.New("mntleak trace: no \"tracing\" line after 60s")
	case <-ctx.Done():
		d.Stop()
		return nil, ctx.Err()
	}
}

// logTime is zap's ISO 8601 time encoding, the daemon's "ts".
const logTime = "2006-01-02T15:04:05.000Z0700"

// logLine is what the benchmark reads from a daemon log line.
type logLine struct {
	Level  string `json:"level"`
	TS     string `json:"ts"`
	Logger string `json:"logger"`
	Msg    string `json:"msg"`
	Kind   string `json:"finding"`
	Cause  string `json:"cause"`
	Path   string `json:"path"`
	Detail struct {
		Call struct {
			Time time.Time `json:"time"`
		} `json:"call"`
	} `json:"detail"`
}

func (d *Daemon) readLog(r io.Reader, copyTo io.Writer, ready chan struct{}, start time.Time) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	isReady := false
	for sc.Scan() {
		now := time.Now()
		b := sc.Bytes()
		if copyTo != nil {
			_, _ = copyTo.Write(append(b, '\n'))
		}
		var l logLine
		if json.Unmarshal(b, &l) != nil {
			continue
		}
		switch {
		case !isReady && l.Msg == "tracing" && l.Logger == "":
			d.Startup = now.Sub(start)
			if cpu, err := cpuTime(d.cmd.Process.Pid); err == nil {
				d.StartupCPU = cpu
			}
			isReady = true
			close(ready)
		case l.Logger == "correlate" && l.Kind != "":
			d.mu.Lock()
			logged, _ := time.Parse(logTime, l.TS)
			d.findings = append(d.findings, Finding{Arrived: now, Logged: logged, Level: l.Level, Kind: l.Kind, Cause: l.Cause,
				Path: l.Path, Call: l.Detail.Call.Time, Line: string(b)})
			d.mu.Unlock()
		}
	}
}

// PID is the daemon's process id.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Findings returns the findings logged so far.
func (d *Daemon) Findings() []Finding {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Finding(nil), d.findings...)
}

// Stop sends SIGINT and waits for the daemon (SIGKILL after 10s).
func (d *Daemon) Stop() error {
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-d.exited:
		d.exited <- err
		return err
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		err := <-d.exited
		d.exited <- err
		return fmt.Errorf("mntleak trace (pid %d) ignored SIGINT for 10s: killed", d.PID())
	}
}

// Scrape reads the daemon's metrics: "name{labels}" -> value.
func (d *Daemon) Scrape() (map[string]float64, error) {
	conn, err := net.DialTimeout("tcp", d.Metrics, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("metrics of pid %d: %w", d.PID(), err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// A plain HTTP/1.0 request: no client library, no keep-alive.
	if _, err := io.WriteString(conn, "GET /metrics HTTP/1.0\r\nHost: "+d.Metrics+"\r\n\r\n"); err != nil {
		return nil, fmt.Errorf("metrics of pid %d: %w", d.PID(), err)
	}
	return parseMetrics(conn)
}

// parseMetrics reads the Prometheus text format after the HTTP header.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.HasPrefix(line, "HTTP/") || !strings.HasPrefix(line, "mntleak_") && !strings.HasPrefix(line, "process_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("read metrics: no mntleak_ series")
	}
	return out, nil
}

// lost sums mntleak_events_lost_total over every kind.
func lost(m map[string]float64) float64 {
	var n float64
	for k, v := range m {
		if strings.HasPrefix(k, "mntleak_events_lost_total") {
			n += v
		}
	}
	return n
}
