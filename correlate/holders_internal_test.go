package correlate

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

func table(t *testing.T, ns uint32, text string) *Table {
	t.Helper()
	mounts, err := mountsOf(text)
	if err != nil {
		t.Fatal(err)
	}
	return NewTable(ns, mounts, time.Time{}, 0)
}

// mountsOf is a mount table's text as mountinfo (the library) reads it,
// as the ledger's entries.
func mountsOf(text string) ([]*procfs.Mount, error) {
	ms, err := mountinfo.GetMountsFromReader(strings.NewReader(text), nil)
	return procfs.MountsOf(ms), err
}

// The node: ext4 root, /run on tmpfs, an nsfs netns file, kubelet's dir.
const node = `1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw
2 1 0:25 / /run rw shared:2 - tmpfs tmpfs rw
3 2 0:4 net:[4026532290] /run/netns/cni-x rw shared:3 - nsfs nsfs rw
4 1 7:3 / /var/lib/kubelet/plugins/rbd/mounts/vol rw shared:4 - ext4 /dev/loop3 rw
`

func TestTranslate(t *testing.T) {
	host := table(t, 1, node)
	tests := []struct {
		name, container, path string
		want                  []string
	}{
		{"host / bound at /rootfs", `10 9 0:90 / / rw - overlay overlay rw
11 10 254:0 / /rootfs rw - ext4 /dev/vda rw
12 11 0:25 / /rootfs/run rw - tmpfs tmpfs rw
`, "/run/netns/cni-x", []string{"/run/netns/cni-x", "/rootfs/run/netns/cni-x"}},
		{"a subdirectory bound elsewhere", `10 9 0:90 / / rw - overlay overlay rw
11 10 254:0 /var/lib/kubelet /host-kubelet rw - ext4 /dev/vda rw
`, "/var/lib/kubelet/plugins/rbd/mounts/vol", []string{"/var/lib/kubelet/plugins/rbd/mounts/vol", "/host-kubelet/plugins/rbd/mounts/vol"}},
		{"nothing shared", `10 9 0:90 / / rw - overlay overlay rw
`, "/run/netns/cni-x", []string{"/run/netns/cni-x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := translate(tt.path, host, table(t, 10, tt.container))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("translate(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestFindIn(t *testing.T) {
	host := table(t, 1, node)
	container := table(t, 10, `10 9 0:90 / / rw - overlay overlay rw
11 10 254:0 / /host rw - ext4 /dev/vda rw
12 11 0:25 / /host/run rw - tmpfs tmpfs rw
13 12 0:4 net:[4026532290] /host/run/netns/cni-x rw - nsfs nsfs rw
14 11 7:3 / /host/var/lib/kubelet/plugins/rbd/mounts/vol rw - ext4 /dev/loop3 rw
15 10 0:4 net:[4026539999] /other-netns rw - nsfs nsfs rw
16 10 254:0 /srv/data /data rw - ext4 /dev/vda rw
`)
	tests := []struct {
		name string
		id   identity
		want []int // mount ids
	}{
		{"block device: any mount of it", identity{dev: event.MakeDev(7, 3), block: true}, []int{14}},
		{"nsfs: the same namespace only", identityOf(host.At("/run/netns/cni-x"), "/run/netns/cni-x"), []int{13}},
		{"bind of a directory: same root", identity{dev: event.MakeDev(254, 0), root: "/srv/data"}, []int{16}},
		{"path through the bind root", identity{path: "/run/netns/cni-x"}, []int{13}},
		{"path, wrong fstype", identity{path: "/run/netns/cni-x", fs: "tmpfs"}, nil},
		// A known device no entry has: the object is looked for by its
		// path instead, unless it is a block device (any mount of it).
		{"device in no entry: by path", identity{dev: event.MakeDev(0, 91), root: "/", path: "/run/netns/cni-x"}, []int{13}},
		{"block device in no entry: not by path", identity{dev: event.MakeDev(7, 9), block: true, path: "/run/netns/cni-x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, m := range findIn(container, tt.id, host) {
				got = append(got, m.ID)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("findIn = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFindAnonymousDevReused: a tmpfs's 0:N is reused by the next tmpfs
// mounted after it is freed; a copy must also be where the object would be.
func TestFindAnonymousDevReused(t *testing.T) {
	caller := table(t, 1, "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n")
	other := table(t, 2, `1 0 254:0 / / rw master:1 - ext4 /dev/vda rw
5 1 0:64 / /run/c13/rootfs rw master:3 - tmpfs rootfs-13 rw
6 1 0:64 / /run/c10/rootfs rw - tmpfs rootfs-10 rw
`)
	got := findIn(other, identity{dev: event.MakeDev(0, 64), root: "/", path: "/run/c10/rootfs"}, caller)
	if len(got) != 1 || got[0].ID != 6 {
		t.Errorf("findIn = %v, want only the copy at /run/c10/rootfs", got)
	}
}

func TestFindOverlayByLayer(t *testing.T) {
	ns := table(t, 20, `1 0 254:0 / / rw - ext4 /dev/vda rw
2 1 0:77 / /var/lib/docker/overlay2/e5da/merged rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/AB:/var/lib/docker/overlay2/l/CD,upperdir=/var/lib/docker/overlay2/e5da/diff,workdir=/var/lib/docker/overlay2/e5da/work
`)
	for dir, want := range map[string]bool{
		"/var/lib/docker/overlay2/e5da":      true, // rm -rf of the layer directory
		"/var/lib/docker/overlay2/e5da/diff": true,
		"/var/lib/docker/overlay2/l/CD":      true,
		"/var/lib/docker/overlay2/ffff":      false,
	} {
		got := findIn(ns, identity{path: dir, layers: true}, nil)
		if (len(got) == 1 && got[0].ID == 2) != want {
			t.Errorf("findIn(%s) = %v, want found=%v", dir, got, want)
		}
		// Not a removal (umount2 EINVAL of the layer dir): no match.
		if dir != "/var/lib/docker/overlay2/e5da/merged" && len(findIn(ns, identity{path: dir}, nil)) != 0 {
			t.Errorf("findIn(%s) matched layers for a call that removes nothing", dir)
		}
	}
}

// A removed directory that is a mount point and an overlay's layer: the
// mount there and the overlay are both what keeps it, each once.
func TestOverlayLayerFoundBesideAMountThere(t *testing.T) {
	ns := table(t, 20, `1 0 254:0 / / rw - ext4 /dev/vda rw
2 1 0:77 / /var/lib/docker/overlay2/e5da/merged rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/AB,upperdir=/var/lib/docker/overlay2/e5da/diff,workdir=/var/lib/docker/overlay2/e5da/work
3 1 0:78 / /var/lib/docker/overlay2/e5da/diff rw - tmpfs diff rw
`)
	var got []int
	for _, m := range findIn(ns, identity{path: "/var/lib/docker/overlay2/e5da/diff", layers: true}, nil) {
		got = append(got, m.ID)
	}
	if want := []int{3, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("findIn = %v, want %v (the tmpfs at the directory, then the overlay using it)", got, want)
	}
}

func TestOutermostAndPropagation(t *testing.T) {
	tb := table(t, 1, `1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw
2 1 7:0 / /srv/vol rw shared:2 master:7 - ext4 /dev/loop0 rw
3 2 7:0 /sub /srv/vol/sub rw unbindable - ext4 /dev/loop0 rw
`)
	got := outermost(tb, []*procfs.Mount{tb.mount(3), tb.mount(2)})
	if len(got) != 1 || got[0].ID != 2 {
		t.Errorf("outermost kept %v", got)
	}
	for id, want := range map[int]string{1: "shared:1", 2: "shared:2 master:7", 3: "private"} {
		if p := Propagation(tb.mount(id)); p != want {
			t.Errorf("Propagation(%d) = %q, want %q", id, p, want)
		}
	}
	if RootPropagation(tb) != "shared" || tb.Root().ID != 1 || tb.Containing("/srv/vol/sub/x").ID != 3 || tb.Containing("/etc").ID != 1 {
		t.Error("root or containing mount wrong")
	}
}

// TestIdentityHelpers: the container, unit and pod a cgroup path names,
// and the words a summary names the workload by: the pod, else the
// container (short id), else the unit; nothing for a path naming none.
func TestIdentityHelpers(t *testing.T) {
	const id = "5f2c0e1a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e"
	const ctr, pod = "container 5f2c0e1a9b8d", "pod 0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70"
	tests := []struct {
		path                        string
		container, unit, pod, words string
	}{
		{"/docker/" + id, id, "", "", ctr},
		{"/system.slice/docker-" + id + ".scope", id, "docker-" + id + ".scope", "", ctr},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0c2f3a1e_7d4b_4c3e_9a1f_2b3c4d5e6f70.slice/cri-containerd-" + id + ".scope",
			id, "cri-containerd-" + id + ".scope", "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70", pod},
		{"/kubepods/burstable/pod0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70/" + id, id, "", "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70", pod},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0c2f3a1e_7d4b_4c3e_9a1f_2b3c4d5e6f70.slice/crio-" + id + ".scope",
			id, "crio-" + id + ".scope", "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70", pod},
		{"/machine.slice/libpod-" + id + ".scope/container", id, "", "", ctr},
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id + ".scope", id, "libpod-" + id + ".scope", "", ctr},
		{"/system.slice/ntpd.service", "", "ntpd.service", "", "ntpd.service"},
		{"/user.slice/user-0.slice/session-3.scope", "", "session-3.scope", "", "session-3.scope"},
		{"/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + id + "/rootfs", id, "", "", ctr},
		{"/", "", "", "", ""},
		{"", "", "", "", ""},
	}
	for _, tt := range tests {
		if c, u, p := ContainerID(tt.path), Unit(tt.path), PodUID(tt.path); c != tt.container || u != tt.unit || p != tt.pod {
			t.Errorf("%s: container %q unit %q pod %q, want %q %q %q", tt.path, c, u, p, tt.container, tt.unit, tt.pod)
		}
		if got := workloadWords(tt.path); got != tt.words {
			t.Errorf("workloadWords(%q) = %q, want %q", tt.path, got, tt.words)
		}
	}
	for root, want := range map[string]string{
		"/tmp/systemd-private-0123456789abcdef0123456789abcdef-ntpd.service-AbCdEf/tmp":                "ntpd.service",
		"/tmp/systemd-private-0123456789abcdef0123456789abcdef-ceph-osd@0.service-Xy12Z9/tmp//deleted": "ceph-osd@0.service",
		"/var/tmp/systemd-private-0123456789abcdef0123456789abcdef-nginx.service-q1w2e3/tmp":           "nginx.service",
		"/tmp/not-systemd/tmp": "",
	} {
		if got := PrivateTmpUnit(root); got != want {
			t.Errorf("PrivateTmpUnit(%q) = %q, want %q", root, got, want)
		}
	}
}

func TestUnknownCause(t *testing.T) {
	c := New(nil, Options{}, func(*finding.Finding) {})
	tb := table(t, 9, "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n")
	n := &Namespace{Ino: 9, Origin: OriginPredates, Inferred: true, members: map[int]*Member{}}
	v := c.classify(&analysis{trigger: &event.Event{Kind: event.KindFailure}, caller: 1}, match{ns: n, table: tb, mount: tb.mount(2), where: "/srv/vol"})
	if v.cause != finding.CauseUnknown || len(v.missing) == 0 {
		t.Errorf("cause %s, missing %v: want unknown saying what is missing", v.cause, v.missing)
	}
}

func TestCauseNames(t *testing.T) {
	for _, c := range finding.Causes() {
		b, err := c.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		back, err := finding.ParseCause(string(b))
		if err != nil || back != c {
			t.Errorf("round trip of %s: %v %v", c, back, err)
		}
	}
	if _, err := finding.CauseInvalid.MarshalText(); err == nil {
		t.Error("invalid cause marshalled")
	}
	if _, err := finding.ParseCause("sunspots"); err == nil {
		t.Error("unknown cause parsed")
	}
}
