package k8s

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/sink/kubeevents"

	"github.com/mntleak/mntleak/finding"
)

// TestPinnedMemoryEmptyDir (issue 15, scenario 2): a privileged pod with
// hostPath /var/lib/kubelet and mountPropagation None
// (monitoring/node-agent), started after a workload pod with a Memory
// emptyDir (shop/cache), has a private copy of cache's tmpfs. cache is
// deleted and goes; the kubelet's rmdir detaches node-agent's copy. With
// node-agent's process keeping its cwd and a file there, the detached copy
// lives on, cache's data readable: one leak finding names cache's volume,
// node-agent (container main) and the pinning process (its cwd and fd),
// the copy reported as detached, the rbind by runc as the leaking event;
// MountLeaked Events on node-agent (related: cache) and on cache. Without
// the pin nothing is left, and mntleak says nothing.
func TestPinnedMemoryEmptyDir(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pinned bool
	}{
		{"pinned", true},
		{"not-pinned", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := setup(t, "shop", "monitoring")
			n := l.n
			work := k8snode.MemoryEmptyDirPod("shop", "cache")
			n.Apply(t, work.Manifest)
			cache := n.WaitPodRunning(t, "shop", work.Name)
			holder := k8snode.KubeletHostPathPod("monitoring", "node-agent")
			if tc.pinned {
				holder = k8snode.Pinner("monitoring", "node-agent", work, cache.UID)
			}
			n.Apply(t, holder.Manifest)
			agent := n.WaitPodRunning(t, "monitoring", holder.Name)
			pid := n.ContainerPID(t, "monitoring", holder.Name, "main")
			mntns, err := k8snode.MountNS(pid)
			if err != nil {
				t.Fatal(err)
			}

			if n.DeletePod(t, "shop", work.Name, true) {
				t.Fatalf("pod shop/cache stuck after its deletion")
			}
			// The kernel's side: with the pin, the deleted pod's data is
			// still readable through the holder's file.
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fd/3")
			if got := strings.TrimSpace(string(b)); tc.pinned && (err != nil || got != work.Content) {
				t.Fatalf("cache's %s through node-agent's fd 3: %q (%v), want %q", work.File, got, err, work.Content)
			}
			privtest.AfterLeakSettle(t)
			uids := []string{cache.UID, agent.UID}
			r := &run{manifests: []k8snode.Manifest{work.Manifest, holder.Manifest}, commands: [][]string{
				{"get", "events", "-n", "shop", "--field-selector", "involvedObject.name=cache", "--sort-by=.metadata.creationTimestamp"},
				{"get", "events", "-n", "monitoring", "--field-selector", "involvedObject.name=node-agent", "--sort-by=.metadata.creationTimestamp"},
			}}
			if !tc.pinned {
				// Long enough for a leak to be confirmed and enriched.
				l.m.waitFindings(t, enrichWait, 1, func(f logged) bool { return isAbout(f, uids, pid) })
				if got := about(l.m.findings(t), uids, pid); len(got) != 0 {
					for _, f := range got {
						t.Log(f.Raw)
					}
					t.Errorf("%d findings about the pods, want none: the kernel detached the copy and nothing pins it", len(got))
				}
				for _, ns := range []string{"shop", "monitoring"} {
					if evs := l.mntleakEvents(t, ns); len(evs) != 0 {
						t.Errorf("%d Events of mntleak in %s, want none: %s", len(evs), ns, evs[0].Note)
					}
				}
				r.write(t, l, tc.name)
				l.m.Stop(t)
				return
			}

			got := l.m.waitFindings(t, enrichWait, 1, func(f logged) bool { return isAbout(f, uids, pid) })
			// Exactly the leak of cache's tmpfs, whole: node-agent's
			// process pins the detached copy, runc's rbind of the hostPath
			// in its namespace is cited, and the fix is the pod's spec and
			// a container restart (no process to act on).
			findingset.Exact(t, details(about(l.m.findings(t), uids, pid)), []findingset.Want{{Kind: finding.KindLeak, Syscall: "umount2",
				Cause: finding.CauseRprivateBind, PID: pid, Role: finding.RolePinner, NS: nsInode(t, mntns), Event: "mount"}})
			if len(got) != 1 {
				t.FailNow()
			}
			f := got[0]
			r.findings = got
			hostDir := work.HostDir(cache.UID)
			rootfs := containerRootfs(agent.Containers["main"])
			for _, c := range []struct{ field, got, want string }{
				{"level", f.Level, "warn"},
				{"finding", f.Finding, string(finding.KindLeak)},
				{"cause", f.Cause, finding.CauseRprivateBind.String()},
				{"syscall", f.Syscall, "umount2"},
				{"path", f.Path, hostDir},
				{"stuck_pod", f.StuckPod, "cache"},
				{"stuck_namespace", f.StuckNamespace, "shop"},
				{"stuck_pod_uid", f.StuckPodUID, cache.UID},
				{"stuck_volume", f.StuckVolume, work.Volume},
				{"stuck_volume_type", f.StuckVolumeType, "emptyDir"},
				{"holder_pod", f.HolderPod, "node-agent"},
				{"holder_namespace", f.HolderNamespace, "monitoring"},
				{"holder_container", f.HolderContainer, "main"},
				{"holder_image", f.HolderImage, k8snode.BusyboxImage},
				{"holder_pid", strconv.Itoa(f.HolderPID), strconv.Itoa(pid)},
				{"holder_role", f.HolderRole, finding.RolePinner},
				{"holder_mntns", "mnt:[" + strconv.FormatUint(uint64(f.HolderMntNS), 10) + "]", mntns},
				{"node", f.Node, n.Name},
				{"enrichment", f.Enrichment, ""},
				{"leak_event", f.LeakEvent, fmt.Sprintf("mount %s → %s/host/kubelet MS_BIND|MS_REC by %s", k8snode.KubeletRoot, rootfs, leakComm(f))},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
				}
			}
			// The leaking event is runc's rbind in node-agent's container,
			// whose init became the pinning process.
			if e := leakEvent(f); e == nil || int(e.PID) != pid {
				t.Errorf("leaking event %+v, want the rbind by pid %d", e, pid)
			}
			// The copy: detached by the kernel, pinned by the process's cwd
			// and its open file.
			h, a := f.Detail.Actor()
			if h == nil || a == nil || !h.Detached || "mnt:["+strconv.FormatUint(uint64(h.MntNS), 10)+"]" != mntns {
				t.Errorf("holder %+v, want node-agent's namespace %s, its copy detached", h, mntns)
			} else {
				var pins []string
				for _, p := range h.Pins {
					pins = append(pins, fmt.Sprintf("%d %s %s", p.PID, p.Pin, p.Path))
				}
				if want := []string{fmt.Sprintf("%d cwd /", pid), fmt.Sprintf("%d fd /%s", pid, work.File)}; strings.Join(pins, ", ") != strings.Join(want, ", ") {
					t.Errorf("pins %q, want %q", pins, want)
				}
			}
			wantPrefix := "pod shop/cache: volume data (emptyDir, tmpfs: its data stays readable) leaked, held by pod monitoring/node-agent (container main): LEAK " + hostDir
			if !strings.HasPrefix(f.Msg, wantPrefix) {
				t.Errorf("line:\n%s\nwant it to start with:\n%s", f.Msg, wantPrefix)
			}
			if want := "mountPropagation: HostToContainer (rslave) for the hostPath " + k8snode.KubeletRoot + " volume"; !strings.HasPrefix(f.Detail.Fix, want) {
				t.Errorf("fix %q, want it to start with %q", f.Detail.Fix, want)
			}
			r.journal = l.m.checkJournal(t, f)

			// The Events: on the holder pod, related to the pod whose
			// volume leaked, and on that pod.
			note := kubeevents.FindingNote(f.Headline, f.Msg)
			agentRef, cacheRef := podRef("monitoring", "node-agent", agent.UID), podRef("shop", "cache", cache.UID)
			if evs := l.waitEvents(t, "monitoring", eventWait, 1); len(evs) != 1 {
				t.Errorf("%d Events of mntleak in monitoring, want 1", len(evs))
			} else {
				checkEvent(t, evs[0], n.Name, kubeevents.ReasonLeaked, note, agentRef, &cacheRef)
			}
			if evs := l.waitEvents(t, "shop", eventWait, 1); len(evs) != 1 {
				t.Errorf("%d Events of mntleak in shop, want 1", len(evs))
			} else {
				checkEvent(t, evs[0], n.Name, kubeevents.ReasonLeaked, note, cacheRef, &agentRef)
			}
			r.write(t, l, tc.name)
			l.m.Stop(t)
		})
	}
}
