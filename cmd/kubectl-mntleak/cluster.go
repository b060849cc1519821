package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/mntleak/mntleak/internal/podref"
)

// daemonBinary is mntleak in its image (the Dockerfile's ENTRYPOINT: the
// image has no PATH).
const daemonBinary = "/mntleak"

// DefaultSelector finds the chart's DaemonSet pods (its selector labels).
const DefaultSelector = "app.kubernetes.io/name=mntleak"

// cluster is what the plugin asks the API server, as the user.
type cluster struct {
	client kubernetes.Interface
	// daemonNS is the namespace of mntleak's DaemonSet ("" for every one).
	daemonNS string
	selector string
}

// access names one request the user's RBAC must allow.
type access struct{ verb, resource, namespace string }

func (a access) String() string {
	where := "in namespace " + a.namespace
	if a.namespace == "" {
		where = "cluster-wide"
	}
	return a.verb + " " + a.resource + " " + where
}

// forbidden is the one-line error for a request RBAC refused.
func forbidden(a access, err error) error {
	return fmt.Errorf("forbidden: your RBAC does not allow %s (kubectl auth can-i %s %s%s): %w", a, a.verb, a.resource, nsFlag(a.namespace), err)
}

func nsFlag(ns string) string {
	if ns == "" {
		return " -A"
	}
	return " -n " + ns
}

// errNotFound: the pod asked about does not exist.
var errNotFound = errors.New("not found")

// pod gets the pod to explain.
func (c cluster) pod(ctx context.Context, ref podref.Ref) (*corev1.Pod, error) {
	p, err := c.client.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("pod %s %w (a pod gone from the API server: --pod-uid UID --node NODE)", ref, errNotFound)
	case apierrors.IsForbidden(err):
		return nil, forbidden(access{"get", "pods", ref.Namespace}, err)
	case err != nil:
		return nil, fmt.Errorf("get pod %s: %w", ref, err)
	}
	return p, nil
}

// daemonPods lists mntleak's running DaemonSet pods, by node ("" for every
// node).
func (c cluster) daemonPods(ctx context.Context, node string) (map[string]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: c.selector}
	if node != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}
	list, err := c.client.CoreV1().Pods(c.daemonNS).List(ctx, opts)
	switch {
	case apierrors.IsForbidden(err):
		return nil, forbidden(access{"list", "pods", c.daemonNS}, err)
	case err != nil:
		return nil, fmt.Errorf("list mntleak's pods (%s): %w", c.selector, err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		if old, ok := out[p.Spec.NodeName]; !ok || p.CreationTimestamp.After(old.CreationTimestamp.Time) {
			out[p.Spec.NodeName] = p
		}
	}
	return out, nil
}

// daemonPod is mntleak's pod on node.
func (c cluster) daemonPod(ctx context.Context, node string) (corev1.Pod, error) {
	pods, err := c.daemonPods(ctx, node)
	if err != nil {
		return corev1.Pod{}, err
	}
	p, ok := pods[node]
	if !ok {
		return corev1.Pod{}, fmt.Errorf("node %s has no running mntleak pod (pods labelled %s%s): install the chart deploy/helm/mntleak", node, c.selector, inNS(c.daemonNS))
	}
	return p, nil
}

func inNS(ns string) string {
	if ns == "" {
		return " in any namespace"
	}
	return " in namespace " + ns
}

// nodes lists the cluster's nodes by name, sorted.
func (c cluster) nodes(ctx context.Context) ([]string, error) {
	list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return nil, forbidden(access{"list", "nodes", ""}, err)
	case err != nil:
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out, nil
}

// mayExec asks the API server whether the user may exec into p (a
// SelfSubjectAccessReview, which every user may make), so a refusal is
// said before a stream is opened.
func (c cluster) mayExec(ctx context.Context, p corev1.Pod) error {
	a := access{"create", "pods/exec", p.Namespace}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: p.Namespace, Verb: "create", Resource: "pods", Subresource: "exec", Name: p.Name}}}
	res, err := c.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil // the exec itself will say
	}
	if !res.Status.Allowed {
		reason := res.Status.Reason
		if reason == "" {
			reason = "denied"
		}
		return fmt.Errorf("forbidden: your RBAC does not allow %s (kubectl auth can-i create pods/exec -n %s): %s", a, p.Namespace, reason)
	}
	return nil
}

// daemonFlags are the flags of the daemon's command line that `mntleak
// why pod` needs too: where the kubelet, the runtime and the state dir are
// on this node.
func daemonFlags(p corev1.Pod) []string {
	return daemonFlagsFor(p, "--kubelet-root=", "--cri-socket=", "--state-dir=")
}

// releaseFlags are the daemon's flags `mntleak release` needs too: its
// state dir (the ledger that proves a leak, the findings it kept, where
// the action is recorded) and its journal socket; without them a release
// in the pod reads /var/lib/mntleak, which is not the daemon's when the
// chart's stateDir is another.
func releaseFlags(p corev1.Pod) []string {
	return daemonFlagsFor(p, "--state-dir=", "--journald-socket=")
}

// daemonFlagsFor are the daemon's flags (the first container's command
// line) with these prefixes.
func daemonFlagsFor(p corev1.Pod, prefixes ...string) []string {
	if len(p.Spec.Containers) == 0 {
		return nil
	}
	c := p.Spec.Containers[0] // mntleak's
	var out []string
	for _, arg := range append(slices.Clone(c.Command), c.Args...) {
		for _, f := range prefixes {
			if strings.HasPrefix(arg, f) {
				out = append(out, arg)
			}
		}
	}
	return out
}
