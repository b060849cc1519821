// Command crimini is the node scripts' CRI client (crictl is not a Go
// module the proxy serves): it lists the pod sandboxes a containerd's CRI
// knows, or stops and removes them all (StopPodSandbox runs the CNI DEL and
// unmounts the sandbox's shm), which down.sh uses for what the kubelet left.
// It lives under an underscore directory so the mntleak module ignores it:
// build.sh copies it into the cache's scratch module, which has cri-api.
//
//	crimini SOCKET pods|rmall
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if len(os.Args) != 3 || (os.Args[2] != "pods" && os.Args[2] != "rmall") {
		fmt.Fprintln(os.Stderr, "usage: crimini SOCKET pods|rmall")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2] == "rmall"); err != nil {
		fmt.Fprintln(os.Stderr, "crimini:", err)
		os.Exit(1)
	}
}

func run(sock string, remove bool) error {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", sock, err)
	}
	defer conn.Close()
	rt := cri.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes on %s: %w", sock, err)
	}
	var failed error
	for _, p := range resp.Items {
		fmt.Printf("%s %s/%s %s\n", p.Id[:13], p.Metadata.Namespace, p.Metadata.Name, p.State)
		if !remove {
			continue
		}
		if _, err := rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			failed = fmt.Errorf("stop sandbox %s: %w", p.Id, err)
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			failed = fmt.Errorf("remove sandbox %s: %w", p.Id, err)
			continue
		}
		fmt.Println("  removed")
	}
	return failed
}
