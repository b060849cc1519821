package kubeletpath

// IsPodUID reports whether s is a pod UID as the kubelet names its
// directory under pods/: a UUID, or a static pod's 32 hex digits.
func IsPodUID(s string) bool { return uid.MatchString(s) }
