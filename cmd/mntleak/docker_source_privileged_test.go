package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/attribution/docker"
)

// checkDockerSource asks the script's Engine what the daemon asks.
func checkDockerSource(t *testing.T, socket string, exp map[string]string) {
	s := docker.New(socket)
	defer s.Close()
	ctx := context.Background()
	tests := []struct {
		id      string
		want    attribution.Container
		wantErr error
	}{
		{exp["container"], attribution.Container{ID: exp["container"], Runtime: "docker", Name: "web", Image: "mntleak/busybox"}, nil},
		{exp["pod_container"], attribution.Container{ID: exp["pod_container"], Runtime: "docker", Name: exp["pod_container_name"],
			Image: "mntleak/busybox", Pod: "web-7f9c", Namespace: "default", PodUID: exp["pod_uid"], PodContainer: "app"}, nil},
		{strings.Repeat("0", 64), attribution.Container{}, attribution.ErrNotFound},
	}
	for _, tt := range tests {
		got, err := s.Container(ctx, tt.id)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("Container(%.12s) = %+v, %v; want %+v, %v", tt.id, got, err, tt.want, tt.wantErr)
		}
	}
	if p, err := s.Pod(ctx, exp["pod_uid"]); err != nil || p != (attribution.Pod{UID: exp["pod_uid"], Name: "web-7f9c", Namespace: "default", Source: "docker"}) {
		t.Errorf("Pod = %+v, %v", p, err)
	}
	if _, err := s.Pod(ctx, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, attribution.ErrNotFound) {
		t.Errorf("unknown pod: %v", err)
	}
	if _, err := docker.New(socket+".absent").Container(ctx, exp["container"]); !errors.Is(err, attribution.ErrUnavailable) {
		t.Errorf("no Engine: %v, want ErrUnavailable", err)
	}
}
