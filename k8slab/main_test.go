package k8slab_test

import (
	"flag"
	"os"
	"testing"

	"github.com/mntleak/mntleak/k8slab"
)

var update = flag.Bool("update", false, "rewrite the golden manifests in testdata/")

func TestMain(m *testing.M) { os.Exit(k8slab.Main(m)) }
