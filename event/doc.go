// Package event holds mntleak's event types: what the BPF programs report,
// decoded into plain Go values, and their JSON and one-line text forms.
//
// It deliberately does not import github.com/cilium/ebpf, so the correlator
// and the replay path can consume events (live or recorded as JSON lines)
// without any BPF dependency. The binary layouts decoded here mirror
// bpf/mntleak.h; tracer/layout_test.go checks them against the
// bpf2go-generated types.
//
// Files: event.go (Event, Kind, Teardown), decode.go (the binary records, length
// checked), names.go (syscall, errno and flag names), syscalls_amd64.go and
// syscalls_arm64.go (generated number-to-name tables), text.go (the one-line text form),
// filter.go (--pid, --comm, --mntns), mountnote.go (MountNote: a mount attached to or
// detached from a watched namespace, as the kernel's fanotify marks tell it), task.go
// (Task: a thread born or moved under tracing, where it is now), json.go (AppendJSON:
// encoding/json's bytes for an Event, without its reflection).
package event
