package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/journald"
	"github.com/mntleak/mntleak/output"
)

func TestParseTraceFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		stdoutTTY bool
		want      traceOptions
		wantErr   string
	}{
		{name: "defaults, piped", want: traceOptions{format: output.JSON, correlate: true, journald: "auto", ringBufBytes: 8 << 20, logLevel: "info", logFormat: "json", stateDir: "/var/lib/mntleak", stateBytes: 64 << 20, journalSocket: journald.SocketPath}},
		{name: "defaults, terminal", stdoutTTY: true, want: traceOptions{format: output.Text, correlate: true, journald: "auto", ringBufBytes: 8 << 20, logLevel: "info", logFormat: "json", stateDir: "/var/lib/mntleak", stateBytes: 64 << 20, journalSocket: journald.SocketPath}},
		{name: "filters", args: []string{"--pid", "10,11", "-pid=12", "--comm", "dockerd", "--mntns", "mnt:[4026532290],4026531840", "--format", "text", "--record", "/tmp/x.jsonl"},
			want: traceOptions{format: output.Text, correlate: true, journald: "auto", record: "/tmp/x.jsonl", ringBufBytes: 8 << 20, logLevel: "info", logFormat: "json", stateDir: "/var/lib/mntleak", stateBytes: 64 << 20, journalSocket: journald.SocketPath,
				filter: event.Filter{PIDs: []uint32{10, 11, 12}, Comms: []string{"dockerd"}, MntNS: []uint32{4026532290, 4026531840}}}},
		{name: "bad format", args: []string{"--format", "yaml"}, wantErr: `unknown format "yaml"`},
		{name: "journald and metrics", args: []string{"--journald", "off", "--journald-events", "--metrics-addr", ":9464"},
			want: traceOptions{format: output.JSON, correlate: true, journald: "off", journalEvents: true, metricsAddr: "127.0.0.1:9464",
				ringBufBytes: 8 << 20, logLevel: "info", logFormat: "json", stateDir: "/var/lib/mntleak", stateBytes: 64 << 20, journalSocket: journald.SocketPath}},
		{name: "output file and journal namespace", args: []string{"--output", "/var/log/mntleak/events.jsonl", "--journald-socket", "/run/systemd/journal.ns/socket"},
			want: traceOptions{format: output.JSON, correlate: true, journald: "auto", output: "/var/log/mntleak/events.jsonl", journalSocket: "/run/systemd/journal.ns/socket",
				ringBufBytes: 8 << 20, logLevel: "info", logFormat: "json", stateDir: "/var/lib/mntleak", stateBytes: 64 << 20}},
		{name: "bad journald", args: []string{"--journald", "maybe"}, wantErr: `invalid -journald "maybe"`},
		{name: "tiny state", args: []string{"--state-size", "100"}, wantErr: "invalid -state-size 100"},
		{name: "bad metrics address", args: []string{"--metrics-addr", "9464"}, wantErr: `invalid -metrics-addr "9464"`},
		{name: "bad pid", args: []string{"--pid", "abc"}, wantErr: `invalid pid "abc"`},
		{name: "zero pid", args: []string{"--pid", "0"}, wantErr: `invalid pid "0"`},
		{name: "bad mntns", args: []string{"--mntns", "mnt:[x]"}, wantErr: `invalid mount namespace "x"`},
		{name: "empty comm", args: []string{"--comm", "a,,b"}, wantErr: "empty name"},
		{name: "ring buffer not a power of two", args: []string{"--ringbuf-size", "5000"}, wantErr: "power of two"},
		{name: "stray argument", args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseTraceFlags(tt.args, tt.stdoutTTY, false, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestRunBadInput: bad input gives one line on stderr and exit 2.
func TestRunBadInput(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, "usage: mntleak"},
		{[]string{"frobnicate"}, `mntleak: unknown command "frobnicate"`},
		{[]string{"trace", "--format", "xml"}, `mntleak trace: unknown format "xml": want json or text`},
		{[]string{"trace", "--log-level", "loud"}, `mntleak trace: log level "loud"`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != exitUsage {
			t.Errorf("run(%q) = %d, want %d", tt.args, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), tt.wantErr) {
			t.Errorf("run(%q) stderr %q, want %q", tt.args, stderr.String(), tt.wantErr)
		}
		if stdout.Len() != 0 {
			t.Errorf("run(%q) wrote to stdout: %q", tt.args, stdout.String())
		}
	}
	var stdout bytes.Buffer
	if code := run([]string{"help"}, &stdout, &bytes.Buffer{}); code != exitOK || !strings.Contains(stdout.String(), "trace") {
		t.Errorf("help: %d %q", code, stdout.String())
	}
}

func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	if code := run([]string{"version"}, &stdout, &bytes.Buffer{}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"mntleak ", "kernel:", "btf:", "ring buffer:", "tracefs:", "tracepoints:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"version", "--json"}, &stdout, &bytes.Buffer{}); code != exitOK || !strings.Contains(stdout.String(), `"features"`) {
		t.Errorf("version --json: %d %s", code, stdout.String())
	}
}
