package podref

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mntleak/mntleak/kubeletpath"
)

// Ref is a pod by namespace and name.
type Ref struct{ Namespace, Name string }

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// ParseNamespaced reads NAMESPACE/NAME (a leading pod/ is taken too).
func ParseNamespaced(s string) (Ref, error) {
	rest := strings.TrimPrefix(s, "pod/")
	ns, name, ok := strings.Cut(rest, "/")
	if !ok {
		return Ref{}, fmt.Errorf("%q: want NAMESPACE/NAME", s)
	}
	if err := check(ns, name); err != nil {
		return Ref{}, fmt.Errorf("%q: %w", s, err)
	}
	return Ref{ns, name}, nil
}

// ParsePod reads pod/NAME, pods/NAME or NAME (kubectl's forms) in
// namespace ns.
func ParsePod(s, ns string) (Ref, error) {
	name := s
	if kind, n, ok := strings.Cut(s, "/"); ok {
		if kind != "pod" && kind != "pods" && kind != "po" {
			return Ref{}, fmt.Errorf("%q: only pods are explained: want pod/NAME", s)
		}
		name = n
	}
	if err := check(ns, name); err != nil {
		return Ref{}, fmt.Errorf("%q: %w", s, err)
	}
	return Ref{ns, name}, nil
}

func check(ns, name string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", ns, errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("pod name %q: %s", name, errs[0])
	}
	return nil
}

// CheckUID says what is wrong with a pod UID, nil when it is one.
func CheckUID(uid string) error {
	if !kubeletpath.IsPodUID(uid) {
		return fmt.Errorf("%q: want a pod UID (8-4-4-4-12 hex digits)", uid)
	}
	return nil
}
