package tracer

import (
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"go.uber.org/zap/zaptest"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestLoadBuffers loads the objects for each buffer and checks what the
// kernel got: the events map's type, one instance of each shared map
// for all the objects, no ring buffer map at all in perf mode (kernels before 5.8 have
// none), and, in the programs as the verifier left them, only the helper
// calls of the buffer in use: use_perf is a constant, so the other branch
// is dead code the verifier removed.
func TestLoadBuffers(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "bpftool")
	tests := []struct {
		buffer Buffer
		events ebpf.MapType
		// Helper calls in an exit program that packs its record (mount)
		// and in one that does not (failure), and calls in neither.
		packed, whole, unwanted []string
	}{
		{BufferRingbuf, ebpf.RingBuf, []string{"bpf_ringbuf_output"}, []string{"bpf_ringbuf_reserve", "bpf_ringbuf_submit"}, []string{"bpf_perf_event_output"}},
		{BufferPerf, ebpf.PerfEventArray, []string{"bpf_perf_event_output"}, []string{"bpf_perf_event_output"}, []string{"bpf_ringbuf_reserve", "bpf_ringbuf_submit", "bpf_ringbuf_output"}},
	}
	for _, tt := range tests {
		t.Run(tt.buffer.String(), func(t *testing.T) {
			o, err := loadObjects(loadOptions{buffer: tt.buffer, ringBufBytes: 1 << 16}, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer o.close()
			if typ := o.mount.Events.Type(); typ != tt.events {
				t.Errorf("events map is a %s, want %s", typ, tt.events)
			}
			// By field name in the generated structs.
			sharedIDs := map[string]ebpf.MapID{
				"Events": mapID(t, o.mount.Events), "Lost": mapID(t, o.mount.Lost), "QuietPending": mapID(t, o.mount.QuietPending),
				"Scratch": mapID(t, o.mount.Scratch), "Stage": mapID(t, o.mount.Stage),
				"Handlers": mapID(t, o.mount.Handlers), "TaskMntnsMap": mapID(t, o.mount.TaskMntnsMap),
			}
			if len(sharedIDs) != len(sharedMaps) {
				t.Fatalf("checking %d shared maps, the loader shares %d", len(sharedIDs), len(sharedMaps))
			}
			for _, objMaps := range []any{&o.mount.mountMaps, &o.newmount.newmountMaps, &o.nsproc.nsprocMaps, &o.failure.failureMaps, &o.dispatch.dispatchMaps} {
				v := reflect.ValueOf(objMaps).Elem()
				for i := 0; i < v.NumField(); i++ {
					m := v.Field(i).Interface().(*ebpf.Map)
					name := v.Type().Field(i).Name
					if m.Type() == ebpf.RingBuf && tt.buffer == BufferPerf {
						t.Errorf("%s: map %s is a ring buffer", v.Type(), name)
					}
					if id, ok := sharedIDs[name]; ok && mapID(t, m) != id {
						t.Errorf("%s: map %s %d is not the shared one (%d)", v.Type(), name, mapID(t, m), id)
					}
				}
			}
			for _, p := range []struct {
				name string
				prog *ebpf.Program
				want []string
			}{{"mount_exit", o.mount.MountExit, tt.packed}, {"failure_exit", o.failure.FailureExit, tt.whole}} {
				name, dump := p.name, xlated(t, p.prog)
				for _, call := range p.want {
					if !strings.Contains(dump, call) {
						t.Errorf("%s: no call to %s", name, call)
					}
				}
				for _, call := range tt.unwanted {
					if strings.Contains(dump, call) {
						t.Errorf("%s: a call to %s is left in the %s program", name, call, tt.buffer)
					}
				}
			}
		})
	}
}

func mapID(t *testing.T, m *ebpf.Map) ebpf.MapID {
	t.Helper()
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

// xlated is the program as the kernel runs it, helper calls by name.
func xlated(t *testing.T, prog *ebpf.Program) string {
	t.Helper()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	out, err := exec.Command("bpftool", "prog", "dump", "xlated", "id", strconv.Itoa(int(id))).CombinedOutput()
	if err != nil {
		t.Fatalf("bpftool prog dump xlated id %d: %v\n%s", id, err, out)
	}
	return string(out)
}
