package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/audit"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// runFlags turns the chart's DaemonSet (rendered with set) into docker run
// flags: hostPID, the capabilities, no privilege escalation, a read-only
// root, every hostPath volume at its path (HostToContainer is rslave), and
// the container's args.
func runFlags(t *testing.T, set ...string) (flags, args []string) {
	t.Helper()
	argv := []string{"template", "mntleak", "helm/mntleak", "--namespace", "mntleak"}
	for _, s := range set {
		argv = append(argv, "--set", s)
	}
	out, err := exec.Command(strings.TrimSpace(helm(t, "path")), argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	ds := daemonSetOf(t, decodeAll(t, bytes.NewReader(out)))
	spec := ds.Template.Spec
	c := spec.Containers[0]
	if spec.HostPID {
		flags = append(flags, "--pid=host")
	}
	for _, d := range c.SecurityContext.Capabilities.Drop {
		flags = append(flags, "--cap-drop", d)
	}
	for _, a := range c.SecurityContext.Capabilities.Add {
		flags = append(flags, "--cap-add", a)
	}
	if p := c.SecurityContext.AllowPrivilegeEscalation; p != nil && !*p {
		flags = append(flags, "--security-opt", "no-new-privileges")
	}
	flags = append(flags, "--read-only")
	host := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			host[v.Name] = v.HostPath.Path
		}
	}
	for _, m := range c.VolumeMounts {
		opts := "rslave"
		if m.MountPropagation != "HostToContainer" {
			t.Fatalf("volume %s: propagation %s", m.Name, m.MountPropagation)
		}
		if m.ReadOnly {
			opts = "ro," + opts
		}
		flags = append(flags, "-v", host[m.Name]+":"+m.MountPath+":"+opts)
	}
	return flags, c.Args
}

// logLine is one line of the daemon's JSON log.
type logLine = findinglog.Line

// answer is what must be the same in why's finding from the node and
// from the pod: the object, the cause, every holding and its actor.
type answer struct {
	Exit     int
	Cause    finding.Cause
	Path     string
	Dev      string
	Holders  []string
	Inferred bool
}

func answerOf(t *testing.T, code int, out []byte) answer {
	t.Helper()
	var f finding.Finding
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("why --json (exit %d): %v\n%s", code, err, out)
	}
	a := answer{Exit: code, Cause: f.Cause, Path: f.Object.Path, Dev: f.Object.Dev.String(), Inferred: f.Inferred}
	for _, h := range f.Holders {
		comm, pid := "", uint32(0) // no process runs in a kept namespace
		if h.Actor != nil {
			comm, pid = h.Actor.Comm, uint32(h.Actor.PID)
		}
		a.Holders = append(a.Holders, strings.Join([]string{h.Where, h.Propagation, comm, itoa(h.MntNS), itoa(pid), itoa(uint32(h.MountID))}, " "))
	}
	slices.Sort(a.Holders)
	return a
}

// TestImage is the Done-when of the image: make image-tar builds it here
// with no registry and no running engine (a private dockerd, stopped
// after); docker load and ctr images import take the archive; the image,
// run as the chart's DaemonSet runs it (hostPID, the six capabilities,
// the same volumes, rslave), reports a leak made on the host in its log;
// why and audit run in the image with --pid=host give the node's answer,
// the same as on the host, and say which view they used.
func TestImage(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "dockerd", "docker", "containerd", "ctr", "unshare", "nsenter", "losetup", "mkfs.ext4", "mount", "umount")
	dir := t.TempDir()
	v := version(t)
	tag := "mntleak:" + v
	archive := filepath.Join(dir, "mntleak.oci.tar")

	// make image-tar, with no engine answering: the script starts its own.
	build := filepath.Join(dir, "build-engine")
	cmd := exec.Command("image/image.sh", "tar")
	cmd.Env = append(os.Environ(), "MNTLEAK_ENGINE_DIR="+build, "DOCKER_HOST=unix://"+filepath.Join(dir, "no-engine.sock"), "MNTLEAK_IMAGE_TAR="+archive)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("image.sh tar: %v\n%s", err, out)
	}
	t.Logf("image.sh tar: %v", time.Since(start).Round(time.Second))
	if b, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(b, []byte(build)) {
		t.Errorf("the build engine left mounts behind")
	}
	killNaming(build) // nothing, unless the script failed to stop it

	// containerd takes the archive as the kubelet's runtime would.
	sock := startContainerd(t, privtest.Mkdir(t, filepath.Join(dir, "containerd")))
	if out, err := exec.Command("ctr", "--address", sock, "-n", "k8s.io", "images", "import", archive).CombinedOutput(); err != nil {
		t.Fatalf("ctr images import: %v\n%s", err, out)
	}
	out, err := exec.Command("ctr", "--address", sock, "-n", "k8s.io", "images", "ls", "-q").CombinedOutput()
	if err != nil || !slices.Contains(strings.Fields(string(out)), "docker.io/library/"+tag) {
		t.Fatalf("ctr images ls after import: %v\n%s", err, out)
	}

	e := startEngine(t, privtest.Mkdir(t, filepath.Join(dir, "engine")))
	if out := e.docker(t, "load", "-i", archive); !strings.Contains(out, "Loaded image: "+tag) {
		t.Fatalf("docker load: %s", out)
	}
	t.Cleanup(func() { _, _ = e.try("rmi", "-f", tag) })

	state := privtest.Mkdir(t, filepath.Join(dir, "state"))
	// No API server here: the chart's Events (on by default) would make the
	// daemon refuse to start without an in-cluster config.
	flags, args := runFlags(t, "journald.enabled=false", "events.enabled=false", "kubeletDir=", "criSocket=", "stateDir="+state, "metrics.host=127.0.0.1")
	flags = engineCaps(t, e, tag, flags)
	run := append(append([]string{"run", "-d", "--name", "mntleak-e2e", "--network", "none"}, flags...), tag)
	e.docker(t, append(run, args...)...)
	logs := func() []logLine {
		// The daemon logs to stderr: docker logs gives it on its own.
		out, _ := exec.Command("docker", "-H", e.host, "logs", "mntleak-e2e").CombinedOutput()
		return findinglog.AllOf(string(out))
	}
	has := func(match func(logLine) bool) bool { return slices.ContainsFunc(logs(), match) }
	if !privtest.Poll(30*time.Second, func() bool { return has(func(l logLine) bool { return l.Msg == "tracing" }) }) {
		b, _ := exec.Command("docker", "-H", e.host, "logs", "mntleak-e2e").CombinedOutput()
		t.Fatalf("the daemon in the image is not tracing:\n%s", b)
	}

	// The seed: a volume on a block device, copied into a container-like
	// namespace whose mounts do not propagate, unmounted on the node. In a
	// node namespace of the test's own, so no other test's namespace
	// takes a copy meanwhile.
	dev := privtest.LoopDevice(t, 16)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	h := node.StartHolder(t, "private", "true")
	node.Run(t, "umount", vol)
	privtest.AfterLeakSettle(t)
	leaked := func(l logLine) bool {
		return l.Logger == "correlate" && l.HolderPID == h.PID && l.Detail != nil && l.Detail.Object.Path == vol
	}
	if !privtest.Poll(15*time.Second, func() bool { return has(leaked) }) {
		t.Fatalf("no leak finding naming holder %d in the container's log:\n%+v", h.PID, logs())
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err == nil {
		t.Fatalf("mkfs.ext4 %s succeeded on a device a namespace still mounts: %s", dev, out)
	}
	busy := func(l logLine) bool {
		return l.Logger == "correlate" && l.HolderPID == h.PID && l.Detail != nil && l.Detail.Kind == finding.KindFailure && l.Detail.Object.Path == dev
	}
	if !privtest.Poll(15*time.Second, func() bool { return has(busy) }) {
		var found []string
		for _, l := range logs() {
			if l.Logger == "correlate" {
				b, _ := json.Marshal(l)
				found = append(found, string(b))
			}
		}
		t.Errorf("no failure finding for mkfs.ext4's EBUSY on %s in the container's log; findings:\n%s", dev, strings.Join(found, "\n"))
	}
	var seed []logLine
	for _, l := range logs() {
		if leaked(l) || busy(l) {
			seed = append(seed, l)
		}
	}
	oraclecheck.CheckLogged(t, seed...)

	// A second device, held only by a mount namespace no process runs in,
	// kept by a bind of its nsfs file: the daemon in the image reads that
	// namespace's table in-process (the image has no nsenter) and names
	// the bind.
	kept := keptDevice(t, node, dir)
	keptBusy := func(l logLine) bool {
		return l.Logger == "correlate" && l.Detail != nil && l.Detail.Kind == finding.KindFailure && l.Detail.Object.Path == kept.dev &&
			len(l.Detail.Holders) == 1 && l.Detail.Holders[0].MntNS == kept.mntns && strings.Contains(l.Detail.Holders[0].KeptBy, kept.file)
	}
	if !privtest.Poll(15*time.Second, func() bool { return has(keptBusy) }) {
		t.Errorf("no failure finding on %s naming mnt:[%d] kept by %s in the container's log:\n%+v", kept.dev, kept.mntns, kept.file, logs())
	}

	// why and audit from inside the image, with hostPID: the node's answer.
	hostBin := filepath.Join("..", "bin", "image", "mntleak") // the binary in the image
	oneShot := append(append([]string{"run", "--rm", "--network", "none"}, flags...), tag)
	for _, target := range []string{dev, vol} {
		hostCmd := exec.Command(hostBin, "why", "--json", "--state-dir", "", target)
		var hostErr bytes.Buffer
		hostCmd.Stderr = &hostErr
		hostOut, _ := hostCmd.Output()
		inCmd := exec.Command("docker", append([]string{"-H", e.host}, append(oneShot, "why", "--json", "--state-dir", "", target)...)...)
		var inErr bytes.Buffer
		inCmd.Stderr = &inErr
		inOut, _ := inCmd.Output()
		onHost, inPod := answerOf(t, hostCmd.ProcessState.ExitCode(), hostOut), answerOf(t, inCmd.ProcessState.ExitCode(), inOut)
		if onHost.Exit != 1 || len(onHost.Holders) == 0 || !strings.Contains(strings.Join(onHost.Holders, "\n"), itoa(h.MntNS)) {
			t.Errorf("why %s on the host: %+v, want held in mnt:[%d]", target, onHost, h.MntNS)
		}
		if !equalAnswers(onHost, inPod) {
			t.Errorf("why %s: the pod's answer differs from the host's:\n host %+v\n pod  %+v", target, onHost, inPod)
		}
		if !strings.Contains(hostErr.String(), "view: mntleak's own mount namespace") || !strings.Contains(inErr.String(), "view: the node's mount namespace") {
			t.Errorf("why %s: views said:\n host %s pod  %s", target, hostErr.String(), inErr.String())
		}
	}
	// The kept namespace, read from the image as on the host.
	keptHost, keptPod := exec.Command(hostBin, "why", "--json", "--state-dir", "", kept.dev),
		exec.Command("docker", append([]string{"-H", e.host}, append(oneShot, "why", "--json", "--state-dir", "", kept.dev)...)...)
	keptHostOut, _ := keptHost.Output()
	keptPodOut, _ := keptPod.Output()
	a, b := answerOf(t, keptHost.ProcessState.ExitCode(), keptHostOut), answerOf(t, keptPod.ProcessState.ExitCode(), keptPodOut)
	if len(a.Holders) != 1 || !strings.Contains(a.Holders[0], " "+itoa(kept.mntns)+" ") || !equalAnswers(a, b) {
		t.Errorf("why %s: host %+v, pod %+v; want the same, held in mnt:[%d]", kept.dev, a, b, kept.mntns)
	}
	// Without hostPID the pod says it cannot see the node, exit 3.
	blind := append(append([]string{"run", "--rm", "--network", "none"}, slices.DeleteFunc(slices.Clone(flags), func(s string) bool { return s == "--pid=host" })...), tag, "why", "--state-dir", "", "/mntleak")
	bc := exec.Command("docker", append([]string{"-H", e.host}, blind...)...)
	var blindErr bytes.Buffer
	bc.Stderr = &blindErr
	_ = bc.Run()
	if bc.ProcessState.ExitCode() != 3 || !strings.Contains(blindErr.String(), "node processes and paths cannot be seen") {
		t.Errorf("why without hostPID: exit %d, stderr %q; want 3 and a line saying node paths cannot be seen", bc.ProcessState.ExitCode(), blindErr.String())
	}
	auditOf := func(argv []string) []string {
		c := exec.Command(argv[0], argv[1:]...)
		out, _ := c.Output()
		var items []audit.Item
		if err := json.Unmarshal(out, &items); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.Kind+" "+it.What+" "+it.Where+" "+itoa(it.MntNS))
		}
		slices.Sort(got)
		return got
	}
	// Below the volume: the engine's own overlays and netns files (in its
	// namespace, not the host's) are leaks to audit too, and one-shot
	// containers come and go between the two runs.
	onHost := auditOf([]string{hostBin, "audit", "--json", "--path-prefix", vol})
	inPod := auditOf(append([]string{"docker", "-H", e.host}, append(oneShot, "audit", "--json", "--path-prefix", vol)...))
	if len(onHost) == 0 || !slices.Equal(onHost, inPod) {
		t.Errorf("audit: the pod's items differ from the host's:\n host %q\n pod  %q", onHost, inPod)
	}

	// docker stop is SIGTERM, as the kubelet stops a pod: exit 0.
	e.docker(t, "stop", "-t", "10", "mntleak-e2e")
	if code := strings.TrimSpace(e.docker(t, "inspect", "-f", "{{.State.ExitCode}}", "mntleak-e2e")); code != "0" {
		t.Errorf("the daemon exited %s after SIGTERM", code)
	}
	e.docker(t, "rm", "mntleak-e2e")
	e.docker(t, "rmi", tag)
	if ids := strings.TrimSpace(e.docker(t, "images", "-q")); ids != "" {
		t.Errorf("images left: %s", ids)
	}
}

// engineCaps returns the run flags the engine takes: Debian's Docker
// 20.10 does not know CAP_BPF and CAP_PERFMON (Kubernetes' containerd
// does), so there the container runs with the DaemonSet's other four,
// a strict subset: CAP_SYS_ADMIN still allows bpf() and perf events, and
// a daemon that works with fewer capabilities works with the six.
func engineCaps(t *testing.T, e *engine, tag string, flags []string) []string {
	t.Helper()
	_, err := e.try(append(append([]string{"run", "--rm", "--network", "none"}, flags...), tag, "version")...)
	if err == nil {
		return flags
	}
	if !strings.Contains(err.Error(), `unknown capability: "CAP_BPF"`) {
		t.Fatal(err)
	}
	var out []string
	for i := 0; i < len(flags); i++ {
		if flags[i] == "--cap-add" && (flags[i+1] == "BPF" || flags[i+1] == "PERFMON") {
			i++
			continue
		}
		out = append(out, flags[i])
	}
	t.Logf("this Docker Engine does not know CAP_BPF: the image runs with SYS_ADMIN, SYS_PTRACE, DAC_READ_SEARCH and SYS_CHROOT only")
	return out
}

func equalAnswers(a, b answer) bool {
	return a.Exit == b.Exit && a.Cause == b.Cause && a.Path == b.Path && a.Dev == b.Dev && a.Inferred == b.Inferred && slices.Equal(a.Holders, b.Holders)
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// kept is a device held only by a mount namespace no process runs in.
type kept struct {
	dev, file string // the device; the bind of the namespace's nsfs file
	mntns     uint32
}

// keptDevice mounts a fresh loop device in the node, keeps a namespace
// with a copy of it by a bind of its nsfs file (on a private mount of its
// own), unmounts it in the node and checks mkfs.ext4 then fails with
// EBUSY. The bind goes at cleanup, and the namespace with it.
func keptDevice(t *testing.T, node privtest.Node, dir string) kept {
	t.Helper()
	k := kept{dev: privtest.LoopDevice(t, 16)}
	vol := privtest.Mkdir(t, filepath.Join(dir, "kept-vol"))
	pins := privtest.Mkdir(t, filepath.Join(dir, "pins"))
	node.Run(t, "mount", k.dev, vol)
	node.Run(t, "mount", "--bind", pins, pins)
	node.Run(t, "mount", "--make-private", pins)
	k.file = filepath.Join(pins, "mnt")
	node.Run(t, "touch", k.file)
	k.mntns = node.KeepNamespace(t, k.file)
	node.Run(t, "umount", vol)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", k.dev).CombinedOutput(); err == nil {
		t.Fatalf("mkfs.ext4 %s succeeded on a device a kept namespace still mounts: %s", k.dev, out)
	}
	return k
}
