package main

import "strings"

// containerdName is the name containerd and the kubelet use for a Docker
// tag: a name without a registry is on docker.io, and a single-component
// one under library/ (mntleak:0.1.0 is docker.io/library/mntleak:0.1.0).
func containerdName(ref string) string {
	first, _, hasSlash := strings.Cut(ref, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return ref
	}
	if !hasSlash {
		ref = "library/" + ref
	}
	return "docker.io/" + ref
}

// tagOf is the tag of name:tag ("latest" when none).
func tagOf(ref string) string {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return "latest"
	}
	return ref[i+1:]
}
