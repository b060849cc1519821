package nodeconf

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/BurntSushi/toml"
)

// Files is where the node's files are read from (a nodeview.View).
type Files interface {
	ReadFile(path string) ([]byte, error)
	ReadDir(path string) ([]string, error)
}

// The defaults of the runtimes' directories.
const (
	DefaultDockerRoot     = "/var/lib/docker"
	DefaultContainerdRoot = "/var/lib/containerd"
	DefaultKubeletRoot    = "/var/lib/kubelet"
)

// The configuration files read.
const (
	DockerConfig     = "/etc/docker/daemon.json"
	ContainerdConfig = "/etc/containerd/config.toml"
)

// Config is what the node's configuration says.
type Config struct {
	DockerRoot     string // data-root
	LiveRestore    bool   // Docker's live-restore, in daemon.json or on dockerd's command line
	ContainerdRoot string // root
	KubeletRoot    string // --root-dir
	// Units are runtime units with a mount namespace of their own.
	Units []Unit
	// Problems name the files that exist but could not be used.
	Problems []string
}

// Read reads the configuration; cmdlines are the command lines of the
// node's dockerd and kubelet processes, by name, if they run.
func Read(f Files, cmdlines map[string][]string) Config {
	c := Config{DockerRoot: DefaultDockerRoot, ContainerdRoot: DefaultContainerdRoot, KubeletRoot: DefaultKubeletRoot}
	c.readDocker(f)
	c.readContainerd(f)
	for _, line := range cmdlines["dockerd"] {
		if v, ok := flagValue(line, "--data-root"); ok {
			c.DockerRoot = v
		}
		if v, ok := flagValue(line, "--live-restore"); ok {
			c.LiveRestore = v != "false"
		} else if hasArg(line, "--live-restore") {
			c.LiveRestore = true
		}
	}
	for _, line := range cmdlines["kubelet"] {
		if v, ok := flagValue(line, "--root-dir"); ok {
			c.KubeletRoot = v
		}
	}
	c.readUnits(f)
	return c
}

func (c *Config) problem(file string, err error) {
	c.Problems = append(c.Problems, file+": "+err.Error())
}

func (c *Config) readDocker(f Files) {
	b, err := f.ReadFile(DockerConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		c.problem(DockerConfig, err)
		return
	}
	var d struct {
		DataRoot    string `json:"data-root"`
		Graph       string `json:"graph"` // before Docker 17.05
		LiveRestore bool   `json:"live-restore"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		c.problem(DockerConfig, err)
		return
	}
	if root := firstNonEmpty(d.DataRoot, d.Graph); root != "" {
		c.DockerRoot = path.Clean(root)
	}
	c.LiveRestore = c.LiveRestore || d.LiveRestore
}

func (c *Config) readContainerd(f Files) {
	b, err := f.ReadFile(ContainerdConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		c.problem(ContainerdConfig, err)
		return
	}
	var d struct {
		Root string `toml:"root"`
	}
	if _, err := toml.Decode(string(b), &d); err != nil {
		c.problem(ContainerdConfig, err)
		return
	}
	if d.Root != "" {
		c.ContainerdRoot = path.Clean(d.Root)
	}
}

// args splits a command line (arguments separated by NUL bytes or
// spaces, as /proc/PID/cmdline gives them).
func args(cmdline string) []string {
	return strings.FieldsFunc(cmdline, func(r rune) bool { return r == 0 || r == ' ' })
}

// hasArg reports whether a command line has the argument a.
func hasArg(cmdline, a string) bool {
	for _, x := range args(cmdline) {
		if x == a {
			return true
		}
	}
	return false
}

// flagValue finds --name=V or --name V on a command line (arguments
// separated by NUL bytes or spaces, as /proc/PID/cmdline gives them).
func flagValue(cmdline, name string) (string, bool) {
	as := args(cmdline)
	for i, a := range as {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(as) && !strings.HasPrefix(as[i+1], "-") {
			return as[i+1], true
		}
	}
	return "", false
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
