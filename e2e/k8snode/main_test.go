package k8snode_test

import (
	"flag"
	"os"
	"testing"

	"github.com/mntleak/mntleak/e2e/k8snode"
)

var update = flag.Bool("update", false, "rewrite the golden manifests in testdata/")

func TestMain(m *testing.M) { os.Exit(k8snode.Main(m)) }
