package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/attribution/cri"
	"github.com/mntleak/mntleak/daemon"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/sink/journald"
	"github.com/mntleak/mntleak/sink/output"
	"github.com/mntleak/mntleak/tracer"
)

// traceDefaults returns the options of `mntleak trace` with no flags, piped,
// changed by set.
func traceDefaults(set func(*traceOptions)) traceOptions {
	o := traceOptions{
		daemon: daemon.Config{Format: output.JSON, Correlate: true, RingBufferBytes: 2 << 20,
			StateDir: "/var/lib/mntleak", StateBytes: 64 << 20,
			CRISockets: cri.DefaultSockets, DockerSocket: "/var/run/docker.sock", RuntimeTimeout: 2 * time.Second,
			KubeletRoot: "/var/lib/kubelet", NodeName: hostname()},
		log: daemon.LogConfig{Level: "info", Format: "json", Journald: daemon.JournaldAuto, JournalSocket: journald.SocketPath},
	}
	if set != nil {
		set(&o)
	}
	return o
}

func TestParseTraceFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		stdoutTTY bool
		want      traceOptions
		wantErr   string
	}{
		{name: "defaults, piped", want: traceDefaults(nil)},
		{name: "defaults, terminal", stdoutTTY: true, want: traceDefaults(func(o *traceOptions) {
			o.daemon.Format, o.log.FindingsOnStdout, o.log.Level = output.Human, true, "warn"
		})},
		{name: "terminal, events and a log level", stdoutTTY: true, args: []string{"--events", "--log-level", "info"}, want: traceDefaults(func(o *traceOptions) {
			o.daemon.Format, o.daemon.Events, o.log.FindingsOnStdout = output.Human, true, true
		})},
		{name: "terminal, json", stdoutTTY: true, args: []string{"--format", "json"}, want: traceDefaults(nil)},
		{name: "piped, human", args: []string{"--format=human"}, want: traceDefaults(func(o *traceOptions) {
			o.daemon.Format, o.log.FindingsOnStdout, o.log.Level = output.Human, true, "warn"
		})},
		{name: "bad events", args: []string{"--events=maybe"}, wantErr: `invalid boolean value "maybe" for -events`},
		{name: "filters", args: []string{"--pid", "10,11", "-pid=12", "--comm", "dockerd", "--mntns", "mnt:[4026532290],4026531840", "--format", "text", "--record", "/tmp/x.jsonl"},
			want: traceDefaults(func(o *traceOptions) {
				o.daemon.Format, o.daemon.Record = output.Text, "/tmp/x.jsonl"
				o.daemon.Filter = event.Filter{PIDs: []uint32{10, 11, 12}, Comms: []string{"dockerd"}, MntNS: []uint32{4026532290, 4026531840}}
			})},
		{name: "bad format", args: []string{"--format", "yaml"}, wantErr: `invalid --format "yaml": want human, text or json`},
		{name: "journald and metrics", args: []string{"--journald", "off", "--journald-events", "--metrics-addr", ":9464"},
			want: traceDefaults(func(o *traceOptions) {
				o.log.Journald, o.daemon.JournalEvents, o.daemon.MetricsAddr = daemon.JournaldOff, true, "127.0.0.1:9464"
			})},
		{name: "output file and journal namespace", args: []string{"--output", "/var/log/mntleak/events.jsonl", "--journald-socket", "/run/systemd/journal.ns/socket"},
			want: traceDefaults(func(o *traceOptions) {
				o.daemon.Output, o.log.JournalSocket = "/var/log/mntleak/events.jsonl", "/run/systemd/journal.ns/socket"
			})},
		{name: "bad journald", args: []string{"--journald", "maybe"}, wantErr: `invalid --journald "maybe"`},
		{name: "tiny state", args: []string{"--state-size", "100"}, wantErr: "invalid --state-size 100"},
		{name: "pprof on loopback", args: []string{"--pprof-addr", ":6060", "--metrics-addr", "10.1.2.3:9464"},
			want: traceDefaults(func(o *traceOptions) { o.daemon.PprofAddr, o.daemon.MetricsAddr = "127.0.0.1:6060", "10.1.2.3:9464" })},
		{name: "pprof on IPv6 loopback", args: []string{"--pprof-addr", "[::1]:6060"},
			want: traceDefaults(func(o *traceOptions) { o.daemon.PprofAddr = "[::1]:6060" })},
		{name: "pprof on every interface", args: []string{"--pprof-addr", "0.0.0.0:6060"}, wantErr: `invalid --pprof-addr "0.0.0.0:6060": profiles are served on a loopback address only`},
		{name: "pprof on a pod address", args: []string{"--pprof-addr", "10.1.2.3:6060"}, wantErr: `invalid --pprof-addr "10.1.2.3:6060": profiles are served on a loopback address only`},
		{name: "pprof on a name", args: []string{"--pprof-addr", "node1:6060"}, wantErr: `invalid --pprof-addr "node1:6060"`},
		{name: "bad metrics address", args: []string{"--metrics-addr", "9464"}, wantErr: `invalid --metrics-addr "9464"`},
		{name: "bad pid", args: []string{"--pid", "abc"}, wantErr: `invalid pid "abc"`},
		{name: "zero pid", args: []string{"--pid", "0"}, wantErr: `invalid pid "0"`},
		{name: "bad mntns", args: []string{"--mntns", "mnt:[x]"}, wantErr: `invalid mount namespace "x"`},
		{name: "empty comm", args: []string{"--comm", "a,,b"}, wantErr: "empty name"},
		{name: "ring buffer not a power of two", args: []string{"--ringbuf-size", "5000"}, wantErr: "power of two"},
		{name: "perf buffer", args: []string{"--buffer", "perf"}, want: traceDefaults(func(o *traceOptions) { o.daemon.Buffer = tracer.BufferPerf })},
		{name: "ring buffer asked", args: []string{"--buffer=ringbuf"}, want: traceDefaults(func(o *traceOptions) { o.daemon.Buffer = tracer.BufferRingbuf })},
		{name: "bad buffer", args: []string{"--buffer", "mmap"}, wantErr: `invalid --buffer "mmap": want auto, ringbuf or perf`},
		{name: "trampoline hooks", args: []string{"--hooks=trampoline"}, want: traceDefaults(func(o *traceOptions) { o.daemon.Hooks = tracer.HooksTrampoline })},
		{name: "tracepoint hooks", args: []string{"--hooks", "tracepoint"}, want: traceDefaults(func(o *traceOptions) { o.daemon.Hooks = tracer.HooksTracepoint })},
		{name: "bad hooks", args: []string{"--hooks", "fentry"}, wantErr: `invalid --hooks "fentry": want auto, trampoline or tracepoint`},
		{name: "runtimes: a CRI socket, no Docker", args: []string{"--cri-socket", "/run/k3s/containerd/containerd.sock", "--docker-socket=", "--runtime-timeout", "500ms"},
			want: traceDefaults(func(o *traceOptions) {
				o.daemon.CRISockets, o.daemon.DockerSocket, o.daemon.RuntimeTimeout = []string{"/run/k3s/containerd/containerd.sock"}, "", 500*time.Millisecond
			})},
		{name: "no CRI", args: []string{"--cri-socket="}, want: traceDefaults(func(o *traceOptions) { o.daemon.CRISockets = nil })},
		{name: "kubernetes", args: []string{"--kubelet-root", "/data/kubelet", "--node-name", "worker-1", "--kubeconfig", "/etc/mntleak/kubeconfig", "--k8s-events"},
			want: traceDefaults(func(o *traceOptions) {
				o.daemon.KubeletRoot, o.daemon.NodeName, o.daemon.Kubeconfig = "/data/kubelet", "worker-1", "/etc/mntleak/kubeconfig"
				o.daemon.Kube, o.daemon.K8sEvents = true, true
			})},
		{name: "events in-cluster", args: []string{"--k8s-events"}, want: traceDefaults(func(o *traceOptions) { o.daemon.Kube, o.daemon.K8sEvents = true, true })},
		{name: "kubeconfig alone: pod names and Events", args: []string{"--kubeconfig", "/k"},
			want: traceDefaults(func(o *traceOptions) { o.daemon.Kube, o.daemon.Kubeconfig, o.daemon.K8sEvents = true, "/k", true })},
		{name: "kubeconfig without Events", args: []string{"--kubeconfig", "/k", "--k8s-events=false"},
			want: traceDefaults(func(o *traceOptions) { o.daemon.Kube, o.daemon.Kubeconfig = true, "/k" })},
		{name: "no API server: no Events by default", args: []string{"--node-name", "worker-1"},
			want: traceDefaults(func(o *traceOptions) { o.daemon.NodeName = "worker-1" })},
		{name: "kubeconfig without a node name: no Events by default", args: []string{"--kubeconfig", "/k", "--node-name="},
			want: traceDefaults(func(o *traceOptions) { o.daemon.Kube, o.daemon.Kubeconfig, o.daemon.NodeName = true, "/k", "" })},
		{name: "relative kubelet root", args: []string{"--kubelet-root", "kubelet"}, wantErr: `invalid --kubelet-root "kubelet"`},
		{name: "zero runtime timeout", args: []string{"--runtime-timeout", "0s"}, wantErr: "invalid --runtime-timeout 0s"},
		{name: "events without a node name", args: []string{"--k8s-events", "--node-name="}, wantErr: "--k8s-events needs --node-name"},
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
		{[]string{"trace", "--format", "xml"}, `mntleak trace: invalid --format "xml": want human, text or json`},
		{[]string{"trace", "--log-level", "loud"}, `mntleak trace: log level "loud"`},
		{[]string{"trace", "--runtime-timeout", "soon"}, `invalid value "soon" for flag -runtime-timeout`},
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

func TestVersionCommand(t *testing.T) {
	var stdout bytes.Buffer
	if code := run([]string{"version"}, &stdout, &bytes.Buffer{}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"mntleak ", "kernel:", "btf:", "ring buffer:", "buffer:", "tracefs:", "tracepoints:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"version", "--json"}, &stdout, &bytes.Buffer{}); code != exitOK || !strings.Contains(stdout.String(), `"features"`) {
		t.Errorf("version --json: %d %s", code, stdout.String())
	}
}

// TestTraceBadBuffer: an unknown --buffer is one line on stderr and exit 2.
func TestTraceBadBuffer(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"trace", "--buffer", "mmap"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if want := "mntleak trace: invalid --buffer \"mmap\": want auto, ringbuf or perf\n"; stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("stderr %q stdout %q, want stderr %q", stderr.String(), stdout.String(), want)
	}
}

// TestWriteFeaturesLines: version names the buffer auto picks and the events
// that missing optional syscalls disable.
func TestWriteFeaturesLines(t *testing.T) {
	var out bytes.Buffer
	writeFeatures(&out, tracer.Features{
		Kernel: "5.4.0", BTF: true, RingBuffer: "yes", Buffer: "ringbuf", Tracefs: "/sys/kernel/tracing", Memlock: string(tracer.MemlockRaised),
		Kprobes: "yes", Fentry: "no (not supported)", Hooks: "tracepoint (no BPF trampolines: the kernel refuses to load an fexit program on __x64_sys_mount: operation not permitted)",
		Tracepoints: map[string]bool{"sys_exit": true, "sched_process_fork": true, "sched_process_exit": true},
		Syscalls:    map[string]bool{"mount": true, "open_tree": false, "mount_setattr": false},
		Disabled:    []string{"open_tree", "mount_setattr"},
	})
	for _, want := range []string{
		"buffer:      ringbuf (what --buffer=auto uses)\n",
		"tracepoints: 3 of 3 present\n",
		"memlock:     raised to unlimited (the kernel counts BPF memory against RLIMIT_MEMLOCK)\n",
		"syscalls:    1 of 3 present (missing: mount_setattr, open_tree)\n",
		"disabled:    open_tree, mount_setattr events (optional syscalls missing)\n",
		"kprobes:     yes (not used)\n",
		"fentry:      no (not supported) (not used)\n",
		"hooks:       tracepoint (no BPF trampolines: the kernel refuses to load an fexit program on __x64_sys_mount: operation not permitted) (what --hooks=auto uses)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "unusable") {
		t.Errorf("output says unusable:\n%s", out.String())
	}
}
