package oracle

import (
	"strings"
	"testing"
)

// answerWith is an answer in which namespace 2 (members 20, 21) has the
// target mounted at /vol, pid 30 pins it by its cwd in namespace 2 and pid
// 40 holds namespace 2's file open; namespaces 1, 2, 3 exist.
func answerWith() Answer {
	return Answer{
		Target: Target{Major: 7, Minor: 3},
		Namespaces: []Holding{{Inode: 2, Points: []string{"/vol"}, Members: []ProcRef{{PID: 20, Comm: "a"}, {PID: 21, Comm: "b"}},
			HeldOpenBy: []Pin{{ProcRef: ProcRef{PID: 40, Comm: "k"}, How: "fd 5"}}}},
		Pins:   []Pin{{ProcRef: ProcRef{PID: 30, Comm: "p"}, How: "cwd", InNS: 2}},
		Live:   map[int]bool{1: true, 20: true, 21: true, 30: true, 40: true, 50: true},
		Exists: map[uint64]bool{1: true, 2: true, 3: true},
	}
}

func TestCheck(t *testing.T) {
	target := Target{Major: 7, Minor: 3}
	leak := func(hs ...HolderFacts) FindingFacts {
		return FindingFacts{Kind: "leak", Target: target, CallerNS: 1, Holders: hs, Paths: []string{"/vol"}}
	}
	for _, tc := range []struct {
		name     string
		f        FindingFacts
		a        func(*Answer)
		disagree []string // substrings, one per disagreement, in order
		moved    int
	}{
		{name: "member named", f: leak(HolderFacts{NS: 2, Members: []int{20, 21}, Actor: &ActorFacts{PID: 20, Role: "member"}})},
		{name: "pinner named", f: leak(HolderFacts{NS: 2, Pins: []PinFacts{{PID: 30, Pin: "cwd"}}, Actor: &ActorFacts{PID: 30, Role: "pinner", Pin: "cwd"}})},
		{name: "nsfd keeper named", f: leak(HolderFacts{NS: 2, Pins: []PinFacts{{PID: 40, Pin: "nsfd"}}})},
		{name: "wrong pin kind", f: leak(HolderFacts{NS: 2, Actor: &ActorFacts{PID: 30, Role: "pinner", Pin: "fd"}}),
			disagree: []string{"pid 30 pins 7:3 by its fd"}},
		{name: "a thread member named by its thread", f: leak(HolderFacts{NS: 2, Members: []int{20, 21, 60}, Threads: map[int]int{60: 61},
			Actor: &ActorFacts{PID: 60, Role: "member"}}), a: threadMember},
		{name: "a thread member named as its process", f: leak(HolderFacts{NS: 2, Members: []int{20, 21}, Actor: &ActorFacts{PID: 60, Role: "member"}}),
			a: threadMember, disagree: []string{"names the process of pid 60 as keeping mnt:[2]; the oracle finds g[60] thread 61 there"}},
		{name: "another thread named", f: leak(HolderFacts{NS: 2, Members: []int{20, 21}, Threads: map[int]int{60: 62}, Actor: &ActorFacts{PID: 60, Role: "member"}}),
			a: threadMember, disagree: []string{"names its thread 62 of pid 60"}},
		{name: "a thread named for a process there by its main thread", f: leak(HolderFacts{NS: 2, Members: []int{20, 21}, Threads: map[int]int{20: 22}}),
			disagree: []string{"names its thread 22 of pid 20 as keeping mnt:[2]; the oracle finds a[20] there"}},
		{name: "a thread's cwd named for its thread", f: leak(HolderFacts{NS: 2, Members: []int{20, 21}, Pins: []PinFacts{{PID: 60, Pin: "cwd", TID: 61}}}),
			a: threadCwd},
		{name: "a thread's cwd named as its process's", f: leak(HolderFacts{NS: 2, Members: []int{20, 21}, Pins: []PinFacts{{PID: 60, Pin: "cwd"}}}),
			a: threadCwd, disagree: []string{"pid 60 pins 7:3 by its cwd; the oracle finds no such pin"}},
		{name: "a bystander named", f: leak(HolderFacts{NS: 2, Actor: &ActorFacts{PID: 50, Role: "member"}}),
			disagree: []string{"names pid 50"}},
		{name: "the wrong namespace", f: leak(HolderFacts{NS: 3}),
			disagree: []string{"mnt:[3] holds 7:3", "the oracle finds mnt:[2]"}},
		{name: "holder counted, not named", f: FindingFacts{Kind: "leak", Target: target, Unnamed: 1}},
		{name: "holder neither named nor counted", f: leak(), disagree: []string{"the oracle finds mnt:[2]"}},
		{name: "the caller's namespace is not a leak's holder", f: leak(HolderFacts{NS: 2}),
			a: func(a *Answer) {
				a.Namespaces = append(a.Namespaces, Holding{Inode: 1, Points: []string{"/elsewhere"}})
			}},
		{name: "the caller's namespace is a failure's", f: FindingFacts{Kind: "failure", Target: target, CallerNS: 1, Holders: []HolderFacts{{NS: 2}}},
			a: func(a *Answer) {
				a.Namespaces = append(a.Namespaces, Holding{Inode: 1, Points: []string{"/elsewhere"}})
			},
			disagree: []string{"the oracle finds mnt:[1]"}},
		{name: "exited holder", f: leak(HolderFacts{NS: 2, Exited: true, Members: []int{99}}), moved: 1},
		{name: "pid gone", f: leak(HolderFacts{NS: 2, Actor: &ActorFacts{PID: 99, Role: "member"}}), moved: 1},
		{name: "namespace gone", f: FindingFacts{Kind: "leak", Target: target, Holders: []HolderFacts{{NS: 9}}}, a: func(a *Answer) { a.Namespaces = nil; a.Pins = nil }, moved: 1},
		{name: "released before the snapshot", f: leak(HolderFacts{NS: 3, Actor: &ActorFacts{PID: 50, Role: "member"}}),
			a: func(a *Answer) { a.Namespaces = nil; a.Pins = nil }, moved: 2},
		{name: "detached pin unnamed", f: leak(HolderFacts{NS: 2}),
			a: func(a *Answer) {
				a.Pins = append(a.Pins, Pin{ProcRef: ProcRef{PID: 50, Comm: "x"}, How: "fd 3", Detached: true})
			},
			disagree: []string{"detached copy of 7:3 pinned by x[50]"}},
		{name: "detached claimed, in a table", f: leak(HolderFacts{NS: 2, Detached: true, Pins: []PinFacts{{PID: 30, Pin: "cwd"}}}),
			disagree: []string{"pins a detached copy"}},
		{name: "an anonymous device number reused", f: FindingFacts{Kind: "leak", Target: Target{Major: 0, Minor: 38}, Holders: []HolderFacts{{NS: 3}}, Paths: []string{"/other"}},
			a: func(a *Answer) { a.Target = Target{Major: 0, Minor: 38} }, moved: 1},
		{name: "a block device is not judged reused when checked at once", f: FindingFacts{Kind: "leak", Target: target, Holders: []HolderFacts{{NS: 3}}, Paths: []string{"/other"}},
			disagree: []string{"mnt:[3] holds", "the oracle finds mnt:[2]"}},
		{name: "but is, when checked late", f: FindingFacts{Kind: "leak", Target: target, Holders: []HolderFacts{{NS: 3}}, Paths: []string{"/other"}, Late: true}, moved: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := answerWith()
			if tc.a != nil {
				tc.a(&a)
			}
			d, moved := Check(tc.f, a)
			if len(d) != len(tc.disagree) || len(moved) != tc.moved {
				t.Fatalf("disagreements %q, moved %q; want %d and %d", d, moved, len(tc.disagree), tc.moved)
			}
			for i, want := range tc.disagree {
				if !strings.Contains(d[i], want) {
					t.Errorf("disagreement %d: %q, want it to say %q", i, d[i], want)
				}
			}
		})
	}
}

// threadMember adds pid 60, whose thread 61 alone is in namespace 2 (its
// main thread is in 1).
func threadMember(a *Answer) {
	a.Live[60] = true
	a.Namespaces[0].Members = append(a.Namespaces[0].Members, ProcRef{PID: 60, TID: 61, Comm: "g"})
}

// threadCwd adds pid 60, whose thread 61 has its own cwd on the target
// in namespace 2 (the process's main thread is in 1, its cwd elsewhere).
func threadCwd(a *Answer) {
	a.Live[60] = true
	a.Pins = append(a.Pins, Pin{ProcRef: ProcRef{PID: 60, TID: 61, Comm: "g"}, MntNS: 2, How: "cwd", InNS: 2})
}

func TestUnheld(t *testing.T) {
	a := answerWith()
	if d := Unheld(a, nil, 2); len(d) != 0 {
		t.Errorf("allowing mnt:[2]: %q", d)
	}
	if d := Unheld(a, nil); len(d) != 2 {
		t.Errorf("allowing nothing: %q, want the mount and the pin", d)
	}
	if d := Unheld(Answer{}, nil); len(d) != 0 {
		t.Errorf("nothing held: %q", d)
	}
	a.Target = Target{Major: 0, Minor: 38}
	if d := Unheld(a, []string{"/elsewhere"}); len(d) != 0 {
		t.Errorf("an anonymous device another filesystem has at /vol, the control's at /elsewhere: %q", d)
	}
	if d := Unheld(a, []string{"/vol"}); len(d) != 2 {
		t.Errorf("an anonymous device at the control's /vol: %q, want the mount and the pin", d)
	}
}
