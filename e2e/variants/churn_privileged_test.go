package variants

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// churn is a no-leak control of a healthy node: teardowns that leave
// nothing behind, next to namespaces of services, and churn of namespaces.
type churn struct {
	name string
	run  func(t *testing.T, l *live, node privtest.Node, dir string) objects // the paths, devices and namespaces no finding may be about
}

func churns() []churn {
	return []churn{
		{"container-churn-with-a-private-service", containerChurn},
		{"namespace-churn", namespaceChurn},
		{"double-unmount", func(t *testing.T, l *live, node privtest.Node, dir string) objects {
			return doubleUnmount(t, l, node, dir, false)
		}},
		{"double-unmount-after-rmdir", func(t *testing.T, l *live, node privtest.Node, dir string) objects {
			return doubleUnmount(t, l, node, dir, true)
		}},
		{"unmount-then-rmdir", unmountThenRmdir},
	}
}

// runChurn runs a churn control under tracing, lets it settle, and checks
// that no finding is about what it tore down or the namespaces it made.
func runChurn(t *testing.T, name string) {
	for _, ch := range churns() {
		if ch.name != name {
			continue
		}
		node := privtest.StartNode(t)
		l := startTracing(t)
		time.Sleep(100 * time.Millisecond)
		objs := ch.run(t, l, node, t.TempDir())
		control(t, l, objs)
		l.controlDevices(t, objs)
		return
	}
	t.Fatalf("no churn control %q", name)
}

// containerChurn: five containers start (a rootfs mounted on the node, a
// private namespace that copies it); a PrivateTmp-less service with a
// private namespace of its own starts after them and holds copies of
// every rootfs; each container is torn down as a runtime does it: its
// processes killed, the rootfs unmounted, its directory removed. The
// kernel detaches the service's copies when the directories go, and
// nothing pins them: no leak.
func containerChurn(t *testing.T, l *live, node privtest.Node, dir string) objects {
	var objs objects
	var containers []*privtest.Holder
	var rootfs []string
	for i := range 5 {
		r := privtest.Mkdir(t, filepath.Join(dir, "c"+strconv.Itoa(i), "rootfs"))
		node.Run(t, "mount", "-t", "tmpfs", "overlay", r)
		containers = append(containers, node.StartHolder(t, "private", "true"))
		rootfs = append(rootfs, r)
		objs.paths = append(objs.paths, r)
		objs.ns = append(objs.ns, containers[i].MntNS)
	}
	service := node.StartHolder(t, "private", "true")
	objs.ns = append(objs.ns, service.MntNS)
	l.holderSeen(t)
	for i, c := range containers {
		_ = c.Cmd.Process.Kill()
		_ = c.Cmd.Wait()
		node.Run(t, "umount", rootfs[i])
		node.Run(t, "rmdir", rootfs[i])
	}
	return objs
}

// namespaceChurn: short-lived namespaces come and go while the node mounts
// and unmounts volumes (a tmpfs, a loop device) with nothing holding them.
func namespaceChurn(t *testing.T, l *live, node privtest.Node, dir string) objects {
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	tmp := privtest.Mkdir(t, filepath.Join(dir, "tmp"))
	for range 10 {
		node.Run(t, "mount", dev, vol)
		node.Run(t, "mount", "-t", "tmpfs", "churn", tmp)
		for range 3 {
			node.Run(t, "unshare", "-m", "true")
		}
		node.Run(t, "umount", vol)
		node.Run(t, "umount", tmp)
	}
	if out, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v %s", dev, err, out)
	}
	return objects{paths: []string{dev, vol, tmp}}
}

// doubleUnmount: a runtime unmounts its volume twice (dockerd, a
// containerd-shim): the second umount2 fails with EINVAL, harmlessly. A
// private namespace made before the mount (no copy) is on the node; with
// afterRmdir, one made after it holds a copy the runtime's rmdir detaches
// before the second unmount.
func doubleUnmount(t *testing.T, l *live, node privtest.Node, dir string, afterRmdir bool) objects {
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	objs := objects{paths: []string{dev, vol}}.withHolder(t, node.StartHolder(t, "private", "true"))
	node.Run(t, "mount", dev, vol)
	if afterRmdir {
		objs = objs.withHolder(t, node.StartHolder(t, "private", "true"))
	}
	l.holderSeen(t)
	node.Run(t, "umount", vol)
	if afterRmdir {
		node.Run(t, "rmdir", vol)
	}
	if err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", vol).Run(); err == nil {
		t.Fatalf("the second umount of %s succeeded", vol)
	}
	return objs
}

// unmountThenRmdir: the seed-000 teardown on this kernel: a private
// namespace holds a copy of a device; the node unmounts it and removes the
// directory at once; the kernel detaches the copy, the device is free.
func unmountThenRmdir(t *testing.T, l *live, node privtest.Node, dir string) objects {
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node.Run(t, "mount", dev, vol)
	holder := node.StartHolder(t, "private", "true")
	objs := objects{paths: []string{dev, vol}}.withHolder(t, holder)
	l.holderSeen(t)
	node.Run(t, "sh", "-c", "umount "+vol+" && rmdir "+vol)
	if out, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s after the copy was detached: %v %s", dev, err, out)
	}
	return objs
}
