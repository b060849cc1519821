package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/mntleak/mntleak/attribution"
)

// PodUID returns the UID of the pod namespace/name among the runtime's
// sandboxes (a ready one first), attribution.ErrNotFound when it has none.
func (s *Source) PodUID(ctx context.Context, namespace, name string) (string, error) {
	client, err := s.connect()
	if err != nil {
		return "", err
	}
	resp, err := client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{attribution.LabelPodNamespace: namespace, attribution.LabelPodName: name}}})
	if err != nil {
		return "", s.err("ListPodSandbox", namespace+"/"+name, err)
	}
	uid := ""
	for _, sb := range resp.GetItems() {
		md := sb.GetMetadata()
		if md.GetNamespace() != namespace || md.GetName() != name {
			continue
		}
		if uid == "" || sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			uid = md.GetUid()
		}
	}
	if uid == "" {
		return "", fmt.Errorf("pod sandbox %s/%s: %w", namespace, name, attribution.ErrNotFound)
	}
	return uid, nil
}

// PodContainers lists the ids of the pod's sandboxes and containers, the
// exited ones too (they keep their root filesystems until removed).
func (s *Source) PodContainers(ctx context.Context, uid string) ([]string, error) {
	client, err := s.connect()
	if err != nil {
		return nil, err
	}
	sel := map[string]string{attribution.LabelPodUID: uid}
	sbs, err := client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		return nil, s.err("ListPodSandbox", uid, err)
	}
	var ids []string
	for _, sb := range sbs.GetItems() {
		if sb.GetMetadata().GetUid() == uid {
			ids = append(ids, sb.GetId())
		}
	}
	cs, err := client.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		return ids, s.err("ListContainers", uid, err)
	}
	for _, c := range cs.GetContainers() {
		ids = append(ids, c.GetId())
	}
	return ids, nil
}
