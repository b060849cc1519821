package nodeconf

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Unit is a runtime unit setting that gives the service a mount namespace
// of its own: its mounts are copied from the node's when it starts, and
// what the node unmounts after that stays mounted in it unless it
// propagates (MountFlags=slave does; a restart with live containers
// strands theirs all the same).
type Unit struct {
	Name    string // docker.service
	Setting string // MountFlags=slave
	File    string // the file that sets it
}

// runtimeUnits are the units whose namespaces matter: they make the
// containers' mounts.
func runtimeUnits() []string {
	return []string{"docker.service", "containerd.service", "crio.service", "kubelet.service"}
}

// unitDirs are systemd's unit directories, most to least important.
func unitDirs() []string {
	return []string{"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"}
}

// namespaceSettings make systemd give a service a mount namespace of its
// own (with the value that does, "" for any true value).
func namespaceSetting(key, value string) bool {
	switch key {
	case "MountFlags":
		return value == "slave" || value == "private"
	case "PrivateTmp", "PrivateMounts", "PrivateDevices", "ProtectHome", "ProtectKernelTunables",
		"ProtectKernelModules", "ProtectControlGroups", "ProtectKernelLogs":
		return isTrue(value)
	case "ProtectSystem":
		return value != "" && value != "no" && value != "false"
	case "ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "TemporaryFileSystem", "BindPaths", "BindReadOnlyPaths", "RootDirectory", "RootImage":
		return value != ""
	}
	return false
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "yes", "true", "on", "1":
		return true
	}
	return false
}

// readUnits reads each runtime unit (the first file found, as systemd
// picks it) and its drop-ins; a later setting overrides an earlier one.
func (c *Config) readUnits(f Files) {
	for _, name := range runtimeUnits() {
		var files []string
		for _, dir := range unitDirs() {
			p := path.Join(dir, name)
			if _, err := f.ReadFile(p); err == nil {
				files = append(files, p)
				break
			} else if !errors.Is(err, fs.ErrNotExist) {
				c.problem(p, err)
			}
		}
		for _, dir := range unitDirs() {
			d := path.Join(dir, name+".d")
			names, err := f.ReadDir(d)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					c.problem(d, err)
				}
				continue
			}
			for _, n := range names {
				if strings.HasSuffix(n, ".conf") {
					files = append(files, path.Join(d, n))
				}
			}
		}
		settings := map[string]Unit{}
		for _, p := range files {
			b, err := f.ReadFile(p)
			if err != nil {
				c.problem(p, err)
				continue
			}
			for key, value := range serviceSettings(string(b)) {
				settings[key] = Unit{Name: name, Setting: key + "=" + value, File: p}
			}
		}
		keys := make([]string, 0, len(settings))
		for key := range settings {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			u := settings[key]
			_, value, _ := strings.Cut(u.Setting, "=")
			if namespaceSetting(key, value) {
				c.Units = append(c.Units, u)
			}
		}
	}
}

// serviceSettings are the [Service] section's settings of a unit file,
// the last one winning.
func serviceSettings(text string) map[string]string {
	out := map[string]string{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		if section != "Service" {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}
