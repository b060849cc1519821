package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/podmounts"
)

// TestWhyPodArguments: bad input to `mntleak why pod` is one line on
// stderr and exit 2, before anything is read or asked.
func TestWhyPodArguments(t *testing.T) {
	for _, tt := range []struct {
		args []string
		line string
	}{
		{nil, "mntleak why pod: want NAMESPACE/NAME or --pod-uid UID"},
		{[]string{"web"}, `mntleak why pod: "web": want NAMESPACE/NAME`},
		{[]string{"shop/web", "shop/db"}, "mntleak why pod: want one NAMESPACE/NAME, got 2 arguments"},
		{[]string{"Shop/web"}, `mntleak why pod: "Shop/web": namespace "Shop": a lowercase RFC 1123 label must consist of`},
		{[]string{"shop/web_1"}, `mntleak why pod: "shop/web_1": pod name "web_1": a lowercase RFC 1123 subdomain must consist of`},
		{[]string{"--pod-uid", "1234"}, `mntleak why pod: --pod-uid "1234": want a pod UID (8-4-4-4-12 hex digits)`},
		{[]string{"--kubelet-root", "kubelet", "shop/web"}, `mntleak why pod: --kubelet-root "kubelet": want an absolute path`},
		{[]string{"--timeout", "0s", "shop/web"}, "mntleak why pod: --timeout 0s: want a positive duration"},
		{[]string{"--bogus"}, "mntleak why pod: flag provided but not defined: -bogus"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"why", "pod"}, tt.args...), &stdout, &stderr)
		if code != exitUsage || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), tt.line) {
			t.Errorf("why pod %q: exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", tt.args, code, stdout.String(), stderr.String(), tt.line)
		}
	}
}

// TestWhyPodParsed: what the flags and the name become.
func TestWhyPodParsed(t *testing.T) {
	var stderr bytes.Buffer
	a, code, done := parseWhyPod([]string{"--pod-uid", "0f3c2a9e-1b2c-4d5e-8f90-123456789abc", "--cri-socket=", "--kubelet-root", "/data/kubelet", "pod/shop/web"}, &stderr)
	if done || code != 0 || a.namespace != "shop" || a.name != "web" || a.uid != "0f3c2a9e-1b2c-4d5e-8f90-123456789abc" || a.criSockets != nil ||
		a.kubeletRoot != "/data/kubelet" || a.podText() != "pod shop/web" {
		t.Errorf("parsed %+v (exit %d, done %v, %s)", a, code, done, stderr.String())
	}
	a, _, _ = parseWhyPod([]string{"--pod-uid", "0f3c2a9e-1b2c-4d5e-8f90-123456789abc"}, &stderr)
	if a.podText() != "pod uid 0f3c2a9e-1b2c-4d5e-8f90-123456789abc" || len(a.criSockets) == 0 {
		t.Errorf("parsed %+v, podText %q", a, a.podText())
	}
}

// TestHoldingNamespaces: of a finding's holders, only those that keep the
// object against the pod's teardown count: not the node's, not mntleak's
// own, not a peer or slave of the node's mount, not the pod's own
// processes; a mount nested in a volume counts every namespace.
func TestHoldingNamespaces(t *testing.T) {
	const uid = "0f3c2a9e-1b2c-4d5e-8f90-123456789abc"
	own := finding.ProcRef{PID: 10, Pod: uid}
	other := finding.ProcRef{PID: 20, Pod: "11111111-2222-4333-8444-555555555555"}
	host := finding.ProcRef{PID: 30}
	f := &finding.Finding{Holders: []finding.Holder{
		{MntNS: 1, Self: true, Where: "/v", Propagation: "shared:2"},
		{MntNS: 2, Where: "/host/v", Propagation: "shared:2", Processes: []finding.ProcRef{other}},                // a peer
		{MntNS: 3, Where: "/v", Propagation: "master:2", Processes: []finding.ProcRef{host}},                      // a slave
		{MntNS: 4, Where: "/data", Propagation: "private", Processes: []finding.ProcRef{own}},                     // the pod itself
		{MntNS: 5, Where: "/v", Propagation: "master:2", Processes: []finding.ProcRef{{PID: 40}}},                 // mntleak's
		{MntNS: 6, Where: "/host/v", Propagation: "private", Processes: []finding.ProcRef{other}},                 // holds it
		{MntNS: 7, Where: "/v", Propagation: "shared:9", Pins: []finding.PinRef{{ProcRef: own}, {ProcRef: host}}}, // holds it
	}}
	view := nodeview.View{Kind: nodeview.NodeRoot, MntNS: 1, Self: 5}
	in := podmounts.Input{UID: uid}
	if got := holdingNamespaces(f, podmounts.Object{PeerGroup: 2}, in, view); !slices.Equal(got, []uint32{6, 7}) {
		t.Errorf("holding %v, want [6 7]", got)
	}
	if got := holdingNamespaces(f, podmounts.Object{PeerGroup: 2, Nested: true}, in, view); !slices.Equal(got, []uint32{2, 3, 4, 6, 7}) {
		t.Errorf("nested: holding %v, want [2 3 4 6 7]", got)
	}
	if got := holdingNamespaces(f, podmounts.Object{}, in, nodeview.View{MntNS: 1, Self: 1}); !slices.Equal(got, []uint32{2, 3, 5, 6, 7}) {
		t.Errorf("no peer group, mntleak on the node: holding %v, want [2 3 5 6 7]", got)
	}
}

// TestPodAnswerShortForm: `mntleak why pod` prints each held object's
// finding in the short form trace prints on a terminal (the headline,
// then the detail lines indented), never the long report; --format json
// (and --json) prints the answer as JSON.
func TestPodAnswerShortForm(t *testing.T) {
	p := finding.ProcRef{PID: 24444, Comm: "sleep"}
	f := &finding.Finding{Kind: finding.KindHeld, Cause: finding.CauseInUse, Summary: "not a leak", Fix: "unmount it first",
		Call:   finding.Call{Syscall: "why", MntNS: 1},
		Object: finding.Object{Path: "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/data/held", FSType: "tmpfs"},
		Holders: []finding.Holder{{MntNS: 1, Self: true, Where: "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/data/held", Propagation: "shared:3"},
			{MntNS: 2, Where: "/kubelet/pods/u/volumes/kubernetes.io~empty-dir/data/held", Propagation: "shared:3", Processes: []finding.ProcRef{p},
				Actor: &finding.Actor{ProcRef: p, Role: finding.RoleMember}}}}
	obj := podmounts.Object{Text: "a mount inside volume data (emptyDir)", Path: f.Object.Path, OnNode: true, Nested: true}
	held := []heldObject{{Object: obj, Holding: []uint32{2}, Finding: f}}
	var out bytes.Buffer
	printPodAnswer(&out, whyPodArgs{namespace: "shop", name: "web", uid: "u"}, []podmounts.Object{obj}, held, false)
	want := "pod shop/web (uid u): 1 objects on this node\n  a mount inside volume data (emptyDir) at " + obj.Path + "\n\n" +
		"a mount inside volume data (emptyDir) is held:\n" + f.Block()
	if out.String() != want {
		t.Errorf("why pod printed:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, args := range [][]string{{"--format", "json"}, {"--json"}} {
		var stderr bytes.Buffer
		a, code, done := parseWhyPod(append(args, "shop/web"), &stderr)
		out.Reset()
		printPodAnswer(&out, a, []podmounts.Object{obj}, held, false)
		if done || code != 0 || !strings.HasPrefix(out.String(), `{"namespace":"shop","name":"web"`) {
			t.Errorf("why pod %q: exit %d, done %v, printed %s%s", args, code, done, out.String(), stderr.String())
		}
	}
	var stderr bytes.Buffer
	if _, code, _ := parseWhyPod([]string{"--format", "yaml", "shop/web"}, &stderr); code != exitUsage ||
		stderr.String() != "mntleak why pod: invalid --format \"yaml\": want human or json\n" {
		t.Errorf("--format yaml: exit %d, %q", code, stderr.String())
	}
}
