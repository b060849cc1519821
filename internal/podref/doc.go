// Package podref reads the names of pods a person types: NAMESPACE/NAME,
// pod/NAME, and pod UIDs, with Kubernetes' own rules for the names
// (k8s.io/apimachinery's validation), so `mntleak why pod` and the kubectl
// plugin refuse the same bad input with the same line.
//
// Files: doc.go, podref.go (Ref, Parse and the UID check).
package podref
