package k8s

import (
	"os"
	"testing"

	"github.com/mntleak/mntleak/e2e/k8snode"
)

func TestMain(m *testing.M) { os.Exit(k8snode.Main(m)) }
