package cri

import (
	"context"
	"fmt"

	"github.com/mntleak/mntleak/attribution"
)

// PodUID returns the UID of the pod namespace/name among the runtime's
// sandboxes (a ready one first), attribution.ErrNotFound when it has none.
func (s *Source) PodUID(ctx context.Context, namespace, name string) (string, error) {
	sbs, err := s.sandboxes(ctx, map[string]string{attribution.LabelPodNamespace: namespace, attribution.LabelPodName: name}, namespace+"/"+name)
	if err != nil {
		return "", err
	}
	uid := ""
	for _, sb := range sbs {
		if sb.namespace != namespace || sb.name != name {
			continue
		}
		if uid == "" || sb.state == sandboxReady {
			uid = sb.uid
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
	sel := map[string]string{attribution.LabelPodUID: uid}
	sbs, err := s.sandboxes(ctx, sel, uid)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, sb := range sbs {
		if sb.uid == uid {
			ids = append(ids, sb.id)
		}
	}
	conn, err := s.connect()
	if err != nil {
		return ids, err
	}
	resp, err := conn.call(ctx, "ListContainers", listRequest(fieldContainerSelector, sel))
	if err != nil {
		return ids, s.err("ListContainers", uid, err)
	}
	cs, err := decodeContainerIDs(resp)
	if err != nil {
		return ids, s.err("ListContainers", uid, err)
	}
	return append(ids, cs...), nil
}
