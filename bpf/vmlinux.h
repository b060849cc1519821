/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel types mntleak reads, reduced to the members it touches.
 *
 * Every struct is marked preserve_access_index, so clang records each member
 * access as a CO-RE relocation and libbpf/cilium-ebpf rewrite the offsets
 * against the running kernel's BTF at load time. That is why a short,
 * hand-kept header is enough: layouts and member order here do not matter,
 * only member names and types. Keeping it small (instead of a 2.8 MB
 * bpftool dump) makes the committed objects independent of the machine that
 * generated them.
 */
#ifndef __MNTLEAK_VMLINUX_H__
#define __MNTLEAK_VMLINUX_H__

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
typedef __u32 dev_t;
typedef int pid_t;
typedef unsigned short umode_t;

enum {
	false = 0,
	true = 1,
};

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PROG_ARRAY = 3,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

/*
 * The saved user registers, per arch (bpf2go -target defines
 * __TARGET_ARCH_*): only the fields the programs read. CO-RE matches them by
 * name in the running kernel's BTF, through arm64's anonymous union.
 */
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long di;
	unsigned long si;
	unsigned long dx;
	unsigned long r10;
	unsigned long r8;
	unsigned long r9;
	unsigned long orig_ax;
};
#elif defined(__TARGET_ARCH_arm64)
struct user_pt_regs {
	u64 regs[31];
	u64 sp;
	u64 pc;
	u64 pstate;
};

struct pt_regs {
	union {
		struct user_pt_regs user_regs;
		struct {
			u64 regs[31];
			u64 sp;
			u64 pc;
			u64 pstate;
		};
	};
	u64 orig_x0;
	s32 syscallno;
};
#else
#error "vmlinux.h: no pt_regs for this target (bpf2go -target amd64 or arm64)"
#endif

struct qstr {
	u32 len;
	const unsigned char *name;
};

struct super_block {
	dev_t s_dev;
	unsigned long s_magic;
};

struct inode {
	umode_t i_mode;
	dev_t i_rdev;
	unsigned long i_ino;
	struct super_block *i_sb;
};

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
};

struct vfsmount {
	struct dentry *mnt_root;
	struct super_block *mnt_sb;
};

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
	int mnt_id;
};

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
};

struct file {
	struct path f_path;
	struct inode *f_inode;
};

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
};

struct files_struct {
	struct fdtable *fdt;
};

struct fs_struct {
	struct path root;
	struct path pwd;
};

struct ns_common {
	unsigned int inum;
};

struct mnt_namespace {
	struct ns_common ns;
};

struct nsproxy {
	struct mnt_namespace *mnt_ns;
};

struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
};

struct thread_info {
	unsigned long flags;
	unsigned long syscall_work;
	u32 status;
};

struct task_struct {
	struct thread_info thread_info;
	pid_t pid;
	pid_t tgid;
	char comm[16];
	int exit_code;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct nsproxy *nsproxy;
	struct fs_struct *fs;
	struct files_struct *files;
	struct mm_struct *mm;
};

#pragma clang attribute pop

/* Raw tracepoint context: the tracepoint's arguments, untyped. */
struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

#endif /* __MNTLEAK_VMLINUX_H__ */
