package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/attribution/cri"
	"github.com/mntleak/mntleak/attribution/kubeapi"
	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/enrich"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/kubeclient"
	"github.com/mntleak/mntleak/internal/podref"
	"github.com/mntleak/mntleak/kubeletpath"
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/podmounts"
	"github.com/mntleak/mntleak/procfs"
)

// whyPodArgs is what `mntleak why pod` was asked.
type whyPodArgs struct {
	namespace, name string // "" when only the UID was given
	uid             string
	kubeconfig      string
	kubeletRoot     string
	criSockets      []string
	stateDir        string
	node            string
	json            bool
	timeout         time.Duration
}

// podText names the pod as the answer does.
func (a whyPodArgs) podText() string {
	if a.name != "" {
		return "pod " + a.namespace + "/" + a.name
	}
	return "pod uid " + a.uid
}

// parseWhyPod reads the flags and the NAMESPACE/NAME of `mntleak why pod`.
func parseWhyPod(args []string, stderr io.Writer) (whyPodArgs, int, bool) {
	var a whyPodArgs
	fs := flag.NewFlagSet("mntleak why pod", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&a.uid, "pod-uid", "", "the pod's UID (a pod gone from the API server); NAMESPACE/NAME is then optional")
	fs.StringVar(&a.kubeconfig, "kubeconfig", "", "kubeconfig file to find the pod's UID (in a pod: the in-cluster config); else the runtime is asked")
	fs.StringVar(&a.kubeletRoot, "kubelet-root", kubeletpath.DefaultRoot, "the kubelet's --root-dir")
	criSocket := fs.String("cri-socket", "auto", "CRI runtime socket (the pod's sandbox and containers, names): auto, a path, or \"\" for none")
	fs.StringVar(&a.stateDir, "state-dir", "/var/lib/mntleak", "persistent lineage of a daemon, if any: cite recorded events instead of inferring")
	format := fs.String("format", "human", "stdout: human (the objects, then each held one's finding as trace prints it on a terminal: a headline and its detail lines) or json")
	fs.BoolVar(&a.json, "json", false, "the same as --format json")
	fs.StringVar(&a.node, "node-name", defaultNodeName(), "this node's name (pods are asked from the API server by node): $NODE_NAME, else the hostname")
	fs.DurationVar(&a.timeout, "timeout", 5*time.Second, "timeout of the questions to the API server and the runtime")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mntleak why pod [flags] NAMESPACE/NAME\n       mntleak why pod [flags] --pod-uid UID [NAMESPACE/NAME]\n\n"+
			"Says what holds a pod's mounts on this node: each volume under <kubelet root>/pods/UID,\nits subPath binds, "+
			"the sandbox's netns and shm, the containers' root filesystems. Exit 0\nwhen nothing outside the pod holds them, 1 when something does, "+
			"2 on bad input, 3 when\nnothing was found but the node could not be seen. Needs root.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseCommand(fs, args, "why pod", stderr); done {
		return a, code, true
	}
	fail := func(format string, v ...any) (whyPodArgs, int, bool) {
		fmt.Fprintf(stderr, "mntleak why pod: "+format+"\n", v...)
		return a, exitUsage, true
	}
	switch {
	case fs.NArg() > 1:
		return fail("want one NAMESPACE/NAME, got %d arguments", fs.NArg())
	case fs.NArg() == 0 && a.uid == "":
		return fail("want NAMESPACE/NAME or --pod-uid UID")
	case a.uid != "" && podref.CheckUID(a.uid) != nil:
		return fail("--pod-uid %v", podref.CheckUID(a.uid))
	case !filepath.IsAbs(a.kubeletRoot):
		return fail("--kubelet-root %q: want an absolute path", a.kubeletRoot)
	case a.timeout <= 0:
		return fail("--timeout %v: want a positive duration", a.timeout)
	case *format != "human" && *format != "json":
		return fail("invalid --format %q: want human or json", *format)
	}
	a.json = a.json || *format == "json"
	if fs.NArg() == 1 {
		ref, err := podref.ParseNamespaced(fs.Arg(0))
		if err != nil {
			return fail("%v", err)
		}
		a.namespace, a.name = ref.Namespace, ref.Name
	}
	switch *criSocket {
	case "auto":
		a.criSockets = cri.DefaultSockets
	case "":
	default:
		a.criSockets = []string{*criSocket}
	}
	return a, 0, false
}

func runWhyPod(args []string, stdout, stderr io.Writer) int {
	a, code, done := parseWhyPod(args, stderr)
	if done {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*a.timeout)
	defer cancel()
	var runtime *cri.Source
	if len(a.criSockets) > 0 {
		runtime = cri.New(a.criSockets...)
		defer runtime.Close() //nolint:errcheck // at exit, nothing to do about it
	}
	sources, err := resolvePodUID(ctx, &a, runtime)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak why pod: %v\n", err)
		return exitError
	}
	var ids []string
	if runtime != nil {
		if ids, err = runtime.PodContainers(ctx, a.uid); err != nil && !errors.Is(err, attribution.ErrUnavailable) {
			fmt.Fprintf(stderr, "mntleak why pod: the pod's containers from the runtime: %v\n", err)
		}
	}
	host := procfs.Host{}
	access, view, err := sight(host)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak why pod: %v\n", err)
		return exitError
	}
	in, problems, err := podmounts.Gather(host, view, a.kubeletRoot, a.uid, ids)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak why pod: %v\n", err)
		return exitError
	}
	objects := podmounts.Find(in)
	corr, list, err := snapshot(a.stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak why pod: %v\n", err)
		return exitError
	}
	lookup := attribution.NewResolver(attribution.Options{Timeout: a.timeout}, sources...)
	held := heldObjects(ctx, corr, objects, view, in, a, lookup)
	vis := list.visibility(access, corr)
	fmt.Fprintf(stderr, "mntleak why pod: %s\n", sightLine(vis, view))
	for _, p := range problems {
		fmt.Fprintf(stderr, "mntleak why pod: not read: %s\n", p)
	}
	for _, h := range held {
		if err := h.Finding.Check(); err != nil {
			fmt.Fprintf(stderr, "mntleak why pod: refusing an unfit finding (a bug in mntleak): %v\n", err)
			return exitError
		}
	}
	printPodAnswer(stdout, a, objects, held, vis.Blind())
	switch {
	case len(held) > 0:
		return exitError
	case vis.Blind():
		return exitBlind
	}
	return exitOK
}

// resolvePodUID sets a.uid from the API server or the runtime when only
// the name was given (and the name from them when only the UID was), and
// returns the sources that name pods and containers in the findings.
func resolvePodUID(ctx context.Context, a *whyPodArgs, runtime *cri.Source) ([]attribution.Source, error) {
	var sources []attribution.Source
	if runtime != nil {
		sources = append(sources, runtime)
	}
	var apiErr error
	if a.kubeconfig != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		client, err := kubeclient.New(a.kubeconfig)
		if err == nil && a.uid == "" {
			p, err := client.GetPod(ctx, a.namespace, a.name)
			switch {
			case err == nil:
				a.uid = p.Metadata.UID
			case kubeclient.IsNotFound(err):
				apiErr = fmt.Errorf("the API server has no pod %s/%s", a.namespace, a.name)
			default:
				apiErr = fmt.Errorf("the API server: %w", err)
			}
		}
		if err == nil {
			sources = append(sources, kubeapi.New(client, a.node))
		} else {
			apiErr = err
		}
	}
	if a.uid == "" && runtime != nil {
		uid, err := runtime.PodUID(ctx, a.namespace, a.name)
		if err == nil {
			a.uid = uid
		} else if apiErr == nil {
			apiErr = fmt.Errorf("the runtime: %w", err)
		} else {
			apiErr = fmt.Errorf("%w; the runtime: %w", apiErr, err)
		}
	}
	if a.uid == "" {
		if apiErr == nil {
			apiErr = errors.New("no API server (--kubeconfig) and no runtime (--cri-socket) to ask")
		}
		return sources, fmt.Errorf("pod %s/%s not found (%v): give --pod-uid UID for a pod gone from the API server", a.namespace, a.name, apiErr)
	}
	return sources, nil
}

// heldObject is one of the pod's objects and what holds it.
type heldObject struct {
	Object podmounts.Object `json:"object"`
	// Holding are the namespaces whose copy keeps the object (the
	// finding's other holders are the node's, mntleak's, the pod's own or
	// copies the node's unmount reaches).
	Holding []uint32         `json:"holding"`
	Finding *finding.Finding `json:"finding"`
}

// heldObjects asks the correlator about each object and keeps those held
// by something else than the pod itself, the node's namespace and
// mntleak's own (its hostPaths are HostToContainer: an unmount reaches
// them), each finding named in pod terms.
func heldObjects(ctx context.Context, corr *correlate.Correlator, objects []podmounts.Object, view nodeview.View, in podmounts.Input,
	a whyPodArgs, lookup attribution.Lookup) []heldObject {
	var out []heldObject
	now := time.Now()
	for _, o := range objects {
		t := correlate.Target{Path: o.Path, Asker: os.Getpid(), MntNS: view.MntNS}
		if !o.OnNode {
			t.Dev, t.Root = o.Dev, o.Root
		}
		f := corr.Why(t, now)
		if f == nil {
			continue
		}
		withoutMntleak(f, view)
		holding := holdingNamespaces(f, o, in, view)
		if len(holding) == 0 && !(o.Nested && len(f.Holders) > 0) {
			continue
		}
		enrich.Fill(ctx, f, enrich.Config{KubeletRoot: a.kubeletRoot}, lookup)
		out = append(out, heldObject{Object: o, Holding: holding, Finding: f})
	}
	return out
}

// holdingNamespaces are the namespaces that hold f's object against the
// pod's teardown: not the node's, not mntleak's own (in a pod: its
// hostPaths are HostToContainer), not one whose copy the node's unmount
// reaches (a peer of the node's mount, or its slave), not one where only
// the pod's own processes run and pin it (a running pod uses its volumes).
// A mount nested in a volume is held by every namespace that has it.
func holdingNamespaces(f *finding.Finding, o podmounts.Object, in podmounts.Input, view nodeview.View) []uint32 {
	podProc := func(p finding.ProcRef) bool {
		return p.Pod == in.UID || (p.Container != "" && slices.Contains(in.ContainerIDs, p.Container))
	}
	var out []uint32
	for _, h := range f.Holders {
		if h.Self || h.MntNS == view.MntNS || (view.Self != view.MntNS && h.MntNS == view.Self) {
			continue
		}
		if !o.Nested {
			if receivesUnmount(h, o) {
				continue
			}
			own := len(h.Processes)+len(h.Pins) > 0
			for _, p := range h.Processes {
				own = own && podProc(p)
			}
			for _, p := range h.Pins {
				own = own && podProc(p.ProcRef)
			}
			if own {
				continue
			}
		}
		if !slices.Contains(out, h.MntNS) {
			out = append(out, h.MntNS)
		}
	}
	return out
}

// withoutMntleak drops from f the copies in mntleak's own namespace when it
// runs in a pod (its hostPaths are HostToContainer: the node's unmount
// reaches them; `kubectl exec` and the DaemonSet share that namespace),
// and a release command aimed at one.
func withoutMntleak(f *finding.Finding, view nodeview.View) {
	if view.Self == view.MntNS {
		return
	}
	f.Holders = slices.DeleteFunc(f.Holders, func(h finding.Holder) bool { return h.MntNS == view.Self })
	if strings.Contains(f.Release, " --mntns "+strconv.FormatUint(uint64(view.Self), 10)+" ") {
		f.Release = ""
	}
}

// receivesUnmount reports whether h's copy is in the peer group of the
// node's mount of o, or a slave of it: the node's unmount reaches it.
func receivesUnmount(h finding.Holder, o podmounts.Object) bool {
	if o.PeerGroup == 0 || h.Where == "" {
		return false
	}
	g := strconv.Itoa(o.PeerGroup)
	for _, tag := range strings.Fields(h.Propagation) {
		if tag == "shared:"+g || tag == "master:"+g {
			return true
		}
	}
	return false
}

// printPodAnswer prints the pod's objects, then the findings, or that
// nothing holds them.
func printPodAnswer(w io.Writer, a whyPodArgs, objects []podmounts.Object, held []heldObject, blind bool) {
	if a.json {
		if objects == nil {
			objects = []podmounts.Object{}
		}
		if held == nil {
			held = []heldObject{}
		}
		b, _ := json.Marshal(struct {
			Namespace string             `json:"namespace,omitempty"`
			Name      string             `json:"name,omitempty"`
			UID       string             `json:"uid"`
			Objects   []podmounts.Object `json:"objects"`
			Held      []heldObject       `json:"held"`
			Complete  bool               `json:"complete"`
		}{a.namespace, a.name, a.uid, objects, held, !blind})
		fmt.Fprintln(w, string(b))
		return
	}
	head := a.podText()
	if a.name != "" {
		head += " (uid " + a.uid + ")"
	}
	fmt.Fprintf(w, "%s: %d objects on this node\n", head, len(objects))
	for _, o := range objects {
		where := ""
		if !o.OnNode {
			where = " (gone from the node's namespace; a copy remains)"
		}
		fmt.Fprintf(w, "  %s at %s%s\n", o.Text, finding.Escape(o.Path), where)
	}
	for _, h := range held {
		fmt.Fprintf(w, "\n%s is held:\n%s", h.Object.Text, h.Finding.Block())
	}
	if len(held) > 0 {
		return
	}
	if blind {
		fmt.Fprintf(w, "nothing found holding %s's mounts among what could be read\n", a.podText())
		return
	}
	fmt.Fprintf(w, "nothing holds %s's mounts\n", a.podText())
}

// defaultNodeName is $NODE_NAME (the chart's downward API), else the
// hostname.
func defaultNodeName() string {
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n
	}
	return hostname()
}
