package kubeletpath

import (
	"path"
	"regexp"
	"strings"
)

// DefaultRoot is the kubelet's default --root-dir.
const DefaultRoot = "/var/lib/kubelet"

// Volume is what a path under a pod's directory is.
type Volume struct {
	// PodUID is the pod's UID (the directory name under pods/).
	PodUID string
	// Name is the volume's name as the pod spec gives it; "" for a path in
	// the pod's directory that is no volume (its etc-hosts, containers/).
	Name string
	// Type is the volume's type in the pod spec's words (secret,
	// configMap, emptyDir, projected, csi, downwardAPI, ...); a plugin
	// this package does not know is named by its unescaped plugin name.
	Type string
	// SubPath is set for the bind of a subPath (volume-subpaths/), and
	// Container is then the container it was made for.
	SubPath   bool
	Container string
	// Block is set for a block volume (volumeDevices/).
	Block bool
}

// Text is the volume in one phrase: "volume cache (emptyDir)", "volume
// cfg (configMap, subPath of container app)"; "" when the path is no
// volume.
func (v Volume) Text() string {
	if v.Name == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("volume " + v.Name)
	var attrs []string
	if v.Type != "" {
		attrs = append(attrs, v.Type)
	}
	if v.Block {
		attrs = append(attrs, "block")
	}
	if v.SubPath {
		s := "subPath"
		if v.Container != "" {
			s += " of container " + v.Container
		}
		attrs = append(attrs, s)
	}
	if len(attrs) > 0 {
		b.WriteString(" (" + strings.Join(attrs, ", ") + ")")
	}
	return b.String()
}

// pluginTypes names the in-tree plugins as the pod spec does.
var pluginTypes = map[string]string{
	"kubernetes.io~secret":       "secret",
	"kubernetes.io~configmap":    "configMap",
	"kubernetes.io~empty-dir":    "emptyDir",
	"kubernetes.io~projected":    "projected",
	"kubernetes.io~csi":          "csi",
	"kubernetes.io~downward-api": "downwardAPI",
	"kubernetes.io~git-repo":     "gitRepo",
	"kubernetes.io~nfs":          "nfs",
	"kubernetes.io~iscsi":        "iscsi",
	"kubernetes.io~fc":           "fc",
	"kubernetes.io~rbd":          "rbd",
	"kubernetes.io~cephfs":       "cephfs",
	"kubernetes.io~local-volume": "local",
	"kubernetes.io~host-path":    "hostPath",
}

// uid matches a pod UID: a UUID, or for a static pod the 32 hex digits of
// its config hash.
var uid = regexp.MustCompile(`^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$`)

// Parse reads a path under root (the kubelet's --root-dir): the pod it
// belongs to and the volume, if any. ok is false for a path outside
// root/pods/<uid>.
func Parse(root, p string) (v Volume, ok bool) {
	root = strings.TrimSuffix(path.Clean(root), "/")
	p = path.Clean(p)
	rest, found := strings.CutPrefix(p, root+"/pods/")
	if !found || root == "" || root == "." {
		return Volume{}, false
	}
	return parsePod(rest)
}

// Find reads a path in which a pod's volume directory shows anywhere:
// under root as Parse does, or, failing that, further down a path that is
// not under root (a copy of the kubelet's directory seen through a
// hostPath: /host/var/lib/kubelet/pods/<uid>/volumes/...). Away from root
// only a UUID followed by volumes/, volume-subpaths/ or volumeDevices/ is
// taken, so a stray "pods" directory elsewhere does not match.
func Find(root, p string) (Volume, bool) {
	if v, ok := Parse(root, p); ok {
		return v, true
	}
	p = path.Clean(p)
	for i := strings.LastIndex(p, "/pods/"); i >= 0; i = strings.LastIndex(p[:i], "/pods/") {
		v, ok := parsePod(p[i+len("/pods/"):])
		if ok && v.Name != "" && len(v.PodUID) == 36 {
			return v, true
		}
	}
	return Volume{}, false
}

// parsePod reads "<uid>[/...]".
func parsePod(rest string) (Volume, bool) {
	parts := strings.Split(rest, "/")
	if !uid.MatchString(parts[0]) {
		return Volume{}, false
	}
	v := Volume{PodUID: parts[0]}
	if len(parts) < 3 {
		return v, true
	}
	switch parts[1] {
	case "volumes", "volumeDevices":
		if len(parts) < 4 {
			return v, true // the plugin's directory
		}
		v.Type = pluginType(parts[2])
		v.Name = parts[3]
		v.Block = parts[1] == "volumeDevices"
	case "volume-subpaths":
		v.Name = parts[2]
		v.SubPath = true
		if len(parts) > 3 {
			v.Container = parts[3]
		}
	}
	return v, true
}

func pluginType(escaped string) string {
	if t, ok := pluginTypes[escaped]; ok {
		return t
	}
	return strings.ReplaceAll(escaped, "~", "/")
}
