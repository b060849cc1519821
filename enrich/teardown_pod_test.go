package enrich

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/attribution/cri"
	"github.com/mntleak/mntleak/attribution/kubeapi"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/kubeclient/kubetest"
)

// TestTeardownPodNamedByTheAPIServer: a pod's teardown left the sandbox's
// shm and the pod's emptyDir in one holder namespace. The pod is named
// (namespace/name) from the kubelet path of whichever object the leak
// names, through the API server when no CRI socket can be reached: the
// finding led with the shm and no pod was named.
func TestTeardownPodNamedByTheAPIServer(t *testing.T) {
	const shm = "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/5c1e9a0b/shm"
	api := kubetest.Start(t, kubetest.Pod("web-7f9c", "shop", stuckUID, "node-1", ""))
	lookup := attribution.NewResolver(attribution.Options{},
		cri.New(filepath.Join(t.TempDir(), "no-such.sock")), kubeapi.New(api.Client(t), "node-1"))
	for _, lead := range []string{shm, volPath} {
		f := makeFinding(shm, shm, "", "")
		f.Others = []finding.Object{{Path: volPath, FSType: "tmpfs"}}
		if lead == volPath {
			f = makeFinding(volPath, volPath, "", "")
			f.Others = []finding.Object{{Path: shm, FSType: "tmpfs"}}
		}
		Fill(context.Background(), f, Config{Node: "node-1"}, lookup)
		if f.Stuck == nil || f.Stuck.Name != "web-7f9c" || f.Stuck.Namespace != "shop" || f.Stuck.Volume != "cache" ||
			!strings.HasPrefix(f.Line(), "pod shop/web-7f9c: volume cache (emptyDir") {
			t.Errorf("leading with %s: stuck %+v, enrichment %q, line:\n%s", lead, f.Stuck, f.Enrichment, f.Line())
		}
	}
}
