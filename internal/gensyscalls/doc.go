// Command gensyscalls writes mntleak's syscall tables for amd64 and arm64
// from one source, golang.org/x/sys/unix (its zsysnum_linux_<arch>.go):
//
//   - bpf/syscall_nr.h: NR_<name> for every syscall of the arch the BPF
//     objects are built for (__TARGET_ARCH_x86 or __TARGET_ARCH_arm64);
//     a syscall the arch lacks (arm64 has no open, mkdir, rmdir...) has
//     no macro, so the programs test it with #ifdef;
//   - event/syscalls_<arch>.go: the number-to-name table that names the
//     syscall of an event.
//
// The tracer takes the numbers of the syscalls it hooks from
// golang.org/x/sys/unix directly (unix.SYS_MOUNT...), the same source.
// Run by go generate in tracer/ (make generate); make check-generated
// fails when the committed output differs.
//
// Files: main.go.
package main
