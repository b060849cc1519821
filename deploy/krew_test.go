package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKrewManifest: the plugin manifest names the binary kubectl-mntleak
// builds, at the chart's version, for each platform once.
func TestKrewManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("krew", "mntleak.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version                        string
			ShortDescription               string `json:"shortDescription"`
			Homepage, Description, Caveats string
			Platforms                      []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				}
				URI    string
				SHA256 string `json:"sha256"`
				Bin    string
				Files  []struct{ From, To string }
			}
		}
	}
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("krew/mntleak.yaml: %v", err)
	}
	v := version(t)
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "mntleak" || m.Spec.Version != "v"+v || m.Spec.ShortDescription == "" {
		t.Errorf("manifest %s %s %s version %s, want a Plugin mntleak at v%s", m.APIVersion, m.Kind, m.Metadata.Name, m.Spec.Version, v)
	}
	seen := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		platform := p.Selector.MatchLabels["os"] + "-" + p.Selector.MatchLabels["arch"]
		if seen[platform] {
			t.Errorf("platform %s twice", platform)
		}
		seen[platform] = true
		if p.Bin != "kubectl-mntleak" || len(p.Files) != 1 || p.Files[0].From != "kubectl-mntleak" || len(p.SHA256) != 64 ||
			!strings.HasSuffix(p.URI, "/kubectl-mntleak-"+v+"-"+platform+".tar.gz") {
			t.Errorf("platform %s: bin %q files %v uri %s sha256 %q", platform, p.Bin, p.Files, p.URI, p.SHA256)
		}
	}
	if len(seen) == 0 {
		t.Error("no platform")
	}
}
