package correlate

import "testing"

// A bind under snapd's /run/snapd/ns names the snap whose namespace it
// keeps; any other path names none.
func TestSnapNamespaceOfABind(t *testing.T) {
	for p, want := range map[string]string{
		"/run/snapd/ns/docker.mnt":     "docker",
		"/run/snapd/ns/docker.fstab":   "",
		"/run/snapd/ns/.mnt":           "",
		"/run/snapd/ns/a/b.mnt":        "",
		"/run/mntleak/ns/docker.mnt":   "",
		"/var/run/snapd/ns/docker.mnt": "",
	} {
		if got, ok := snapNamespace(p); got != want || ok != (want != "") {
			t.Errorf("snapNamespace(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
}
