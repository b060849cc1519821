package k8snode

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TokenKubeconfig applies rbac (a ServiceAccount and what it may do;
// deleted at cleanup) and returns a kubeconfig, in a temporary directory of
// the test, that reaches the node as that ServiceAccount (namespace/name)
// with a token of an hour: what a test gives a program to act with that
// account's rights, and no more.
func (n *Node) TokenKubeconfig(t testing.TB, rbac []byte, namespace, name string) string {
	t.Helper()
	if _, err := n.KubectlErr(rbac, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply the RBAC of %s/%s: %v", namespace, name, err)
	}
	t.Cleanup(func() {
		if _, err := n.KubectlErr(rbac, "delete", "-f", "-", "--ignore-not-found"); err != nil {
			t.Errorf("delete the RBAC of %s/%s: %v", namespace, name, err)
		}
	})
	token := strings.TrimSpace(n.Kubectl(t, "create", "token", "-n", namespace, name, "--duration=1h"))
	cfg, err := clientcmd.LoadFromFile(n.Kubeconfig)
	if err != nil {
		t.Fatalf("load %s: %v", n.Kubeconfig, err)
	}
	for user := range cfg.AuthInfos {
		cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	}
	file := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatalf("write %s: %v", file, err)
	}
	return file
}
