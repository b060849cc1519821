package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// runner runs a command in a pod's first container and returns its exit
// code; err is for a command that could not be run.
type runner interface {
	run(ctx context.Context, p corev1.Pod, cmd []string, stdout, stderr io.Writer) (int, error)
}

// execRunner runs through the API server's exec subresource: WebSocket
// first, SPDY when the server cannot upgrade to it (as kubectl does).
type execRunner struct {
	config *rest.Config
	client kubernetes.Interface
}

func (e execRunner) run(ctx context.Context, p corev1.Pod, cmd []string, stdout, stderr io.Writer) (int, error) {
	container := ""
	if len(p.Spec.Containers) > 0 {
		container = p.Spec.Containers[0].Name
	}
	req := e.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.config, "POST", req.URL().String())
	if err != nil {
		return 0, fmt.Errorf("exec in pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.config, "POST", req.URL())
	if err != nil {
		return 0, fmt.Errorf("exec in pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, fmt.Errorf("exec in pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitStatus(), nil
	case apierrors.IsForbidden(err):
		return 0, forbidden(access{"create", "pods/exec", p.Namespace}, err)
	}
	return 0, fmt.Errorf("exec in pod %s/%s: %w", p.Namespace, p.Name, err)
}
