package kubee2e

import (
	"os"
	"testing"

	"github.com/mntleak/mntleak/k8slab"
)

func TestMain(m *testing.M) { os.Exit(k8slab.Main(m)) }
