package tracer

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// walkSpecs are the objects whose programs walk paths.
var walkSpecs = map[string]func() (*ebpf.CollectionSpec, error){
	"mount": loadMount, "newmount": loadNewmount, "failure": loadFailure, "nsproc": loadNsproc,
}

// TestPrepareWalkPicks prepares every object for each walk, as loadObjects
// does, and checks the instructions the kernel would get: with the
// bpf_loop walk, each walking program loads the callback's address once
// per bpf_loop call; with the bounded walk, no_bpf_loop is set and no
// program loads any function's address (kernels before 5.13 refuse such a
// load even in dead code), while the bpf_loop calls stay, in the branch the
// verifier drops.
func TestPrepareWalkPicks(t *testing.T) {
	walks := walkPrograms(&objects{})
	for _, walk := range []PathWalk{WalkLoop, WalkBounded} {
		for obj, load := range walkSpecs {
			t.Run(walk.String()+"/"+obj, func(t *testing.T) {
				spec, err := load()
				if err != nil {
					t.Fatal(err)
				}
				if err := (loadOptions{buffer: BufferRingbuf, ringBufBytes: 1 << 16, walk: walk}).prepare(obj, spec); err != nil {
					t.Fatal(err)
				}
				if v, ok := spec.Variables["no_bpf_loop"]; ok {
					var set bool
					if err := v.Get(&set); err != nil {
						t.Fatal(err)
					}
					if set != (walk == WalkBounded) {
						t.Errorf("no_bpf_loop = %v for the %s walk", set, walk)
					}
				} else if obj != "nsproc" {
					t.Errorf("no no_bpf_loop constant in %s", obj)
				}
				for name, prog := range spec.Programs {
					var loads, calls int
					for _, ins := range prog.Instructions {
						if ins.IsLoadOfFunctionPointer() {
							loads++
						}
						if ins.IsBuiltinCall() && asm.BuiltinFunc(ins.Constant) == asm.FnLoop {
							calls++
						}
					}
					_, walks := walks[name]
					switch {
					case !walks && loads+calls != 0:
						t.Errorf("%s: %d function address loads, %d bpf_loop calls in a program that walks no path", name, loads, calls)
					case walks && calls == 0:
						t.Errorf("%s: no call to bpf_loop", name)
					case walks && walk == WalkLoop && loads != calls:
						t.Errorf("%s: %d loads of the callback's address for %d bpf_loop calls", name, loads, calls)
					case walk == WalkBounded && loads != 0:
						t.Errorf("%s: %d loads of a function's address left for the bounded walk", name, loads)
					}
				}
			})
		}
	}
}

// TestPrepareWalkUnknownCallback: a function address the loader does not
// know to be dead code without bpf_loop fails the load, naming the object,
// the program and the function, rather than leaving it for the kernel.
func TestPrepareWalkUnknownCallback(t *testing.T) {
	tests := []struct {
		walk    PathWalk
		ref     string
		wantErr string
	}{
		{WalkLoop, "other_cb", ""},
		{WalkBounded, walkCallback, ""},
		{WalkBounded, "other_cb", `BPF object test: program prog loads the address of "other_cb"`},
	}
	for _, tt := range tests {
		t.Run(tt.walk.String()+"/"+tt.ref, func(t *testing.T) {
			load := asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(tt.ref)
			spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"prog": {
				Name:         "prog",
				Instructions: asm.Instructions{load, asm.Mov.Imm(asm.R0, 0), asm.Return()},
			}}}
			err := prepareWalk("test", spec, tt.walk)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := spec.Programs["prog"].Instructions[0]
			if want := tt.walk == WalkLoop; got.IsLoadOfFunctionPointer() != want {
				t.Errorf("after prepare: %v, want a function address load: %v", got, want)
			}
			if tt.walk == WalkBounded && (got.Constant != 0 || got.Dst != asm.R2 || got.Size() != load.Size()) {
				t.Errorf("after prepare: %v, want r2 = 0 in as many bytes", got)
			}
		})
	}
}

// TestMaxWalk: tracer.MaxWalk is the depth the BPF side walks.
func TestMaxWalk(t *testing.T) {
	src, err := os.ReadFile("../bpf/path.bpf.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define MAX_WALK (\d+)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no MAX_WALK in bpf/path.bpf.h")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != MaxWalk {
		t.Errorf("MAX_WALK is %d in bpf/path.bpf.h, MaxWalk %d", n, MaxWalk)
	}
}
