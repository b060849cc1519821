package tracer

// One object per concern (see bpf/). The generated Go files and .o objects
// are committed so that `go build` needs no clang; `make check-generated`
// regenerates them and fails on any difference.
//
// The objects are built for amd64 and arm64; gensyscalls first writes both
// arches' syscall numbers, for the programs and for event names, from
// golang.org/x/sys/unix.
//
// -type names the record structs so layout_test.go can compare their sizes
// with the decoder in package event.

//go:generate go run ../internal/gensyscalls -header ../bpf/syscall_nr.h -events ../event
//go:generate go tool bpf2go -go-package tracer -target amd64,arm64 -no-global-types -type event_header -type mount_event -type umount_event -type pivot_root_event -type lost_counts mount ../bpf/mount.bpf.c -- -I../bpf -O2 -g -Wall -Werror
//go:generate go tool bpf2go -go-package tracer -target amd64,arm64 -no-global-types -type open_tree_event -type move_mount_event -type fsopen_event -type fsmount_event -type mount_setattr_event newmount ../bpf/newmount.bpf.c -- -I../bpf -O2 -g -Wall -Werror
//go:generate go tool bpf2go -go-package tracer -target amd64,arm64 -no-global-types -type ns_event -type fork_event -type exit_event -type task_ns nsproc ../bpf/nsproc.bpf.c -- -I../bpf -O2 -g -Wall -Werror
//go:generate go tool bpf2go -go-package tracer -target amd64,arm64 -no-global-types -type failure_event failure ../bpf/failure.bpf.c -- -I../bpf -O2 -g -Wall -Werror
//go:generate go tool bpf2go -go-package tracer -target amd64,arm64 -no-global-types dispatch ../bpf/dispatch.bpf.c -- -I../bpf -O2 -g -Wall -Werror
