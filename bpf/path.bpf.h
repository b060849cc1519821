/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Absolute paths built in the kernel.
 *
 * A relative path argument (dirfd or cwd) and an fd argument only mean
 * something in the caller's context at the time of the call: by the time
 * userspace reads the event the fd may be closed and the cwd changed. So the
 * directory is turned into a path here, by walking dentries up to the
 * caller's root and crossing mounts, as d_path() does. bpf_d_path() is not
 * allowed from tracepoints, hence the explicit bounded walk.
 *
 * The walk writes components backwards into a per-CPU scratch buffer ending
 * at DIR_END; a relative user suffix is read at DIR_END+1, so the absolute
 * path is one contiguous run that is copied into the event once.
 *
 * Two forms of the walk's loop, picked by the loader through no_bpf_loop:
 * bpf_loop (Linux 5.17+), and a plain bounded loop for older kernels. The
 * bounded loop keeps the walk state in the per-CPU map value, not on the
 * stack: the verifier does not track what a map value holds, so every
 * iteration starts from the same state and is verified once per iteration
 * (about 37k instructions per walk on 6.18, 92k for the program with the
 * most walks, against 1M allowed), where state tracked on the stack (an
 * offset that moves) gives a new state per path and blows the budget.
 * tracer/walk_privileged_test.go measures both forms.
 */
#ifndef __MNTLEAK_PATH_BPF_H__
#define __MNTLEAK_PATH_BPF_H__

#include "common.bpf.h"

#define SCRATCH_SIZE 16384
#define SCRATCH_MASK 8191	/* offsets stay below DIR_END + PATH_LEN */
#define DIR_END 4096
#define MAX_WALK 64		/* components plus mount crossings (tracer.MaxWalk) */
#define NAME_MASK 255		/* NAME_MAX */

/*
 * Set by the loader (rodata) when the kernel has no bpf_loop helper: the
 * walk runs as a bounded loop. The verifier knows the constant and drops
 * the other branch, so on such a kernel no bpf_loop call is left; the
 * loader also removes the callback's address from the bpf_loop branch,
 * which kernels before 5.13 could not even parse (tracer/walk.go).
 */
volatile const bool no_bpf_loop = false;

/* State of one dentry walk, carried across iterations. */
struct walk_ctx {
	struct vfsmount *vfsmnt;
	struct dentry *dentry;
	struct dentry *root_dentry;
	struct vfsmount *root_mnt;
	int off;	/* start of the path written so far */
	int done;	/* reached the caller's root or the namespace root */
	int trunc;
	int _pad;
};

struct scratch {
	char buf[SCRATCH_SIZE];
	/* The bounded loop's walk state (see the top of this file). */
	struct walk_ctx walk;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline char *scratch_buf(void)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);

	return s ? s->buf : NULL;
}

static __always_inline struct mount *real_mount(struct vfsmount *vfsmnt)
{
	return (struct mount *)((void *)vfsmnt -
				bpf_core_field_offset(struct mount, mnt));
}

/*
 * One step of the walk: cross to the parent mount at a mount root, else
 * prepend "/name". It is the bpf_loop callback (data on the stack), and
 * the bounded loop calls it as a function (data in the map value).
 */
static long walk_step(__u32 i, void *data)
{
	struct walk_ctx *c = data;
	struct dentry *dentry = c->dentry, *mnt_root, *parent;
	struct vfsmount *vfsmnt = c->vfsmnt;
	const unsigned char *name;
	struct scratch *s;
	__u32 zero = 0, len;
	int off = c->off;

	if (dentry == c->root_dentry && vfsmnt == c->root_mnt)
		goto done;
	mnt_root = BPF_CORE_READ(vfsmnt, mnt_root);
	parent = BPF_CORE_READ(dentry, d_parent);
	if (dentry == mnt_root || dentry == parent) {
		struct mount *mnt = real_mount(vfsmnt);
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		/* The namespace root, or a detached tree. */
		if (up == mnt || !up)
			goto done;
		c->dentry = BPF_CORE_READ(mnt, mnt_mountpoint);
		c->vfsmnt = (struct vfsmount *)((void *)up +
			    bpf_core_field_offset(struct mount, mnt));
		return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		goto done;
	len = BPF_CORE_READ(dentry, d_name.len) & NAME_MASK;
	name = BPF_CORE_READ(dentry, d_name.name);
	if (off > DIR_END || off < (int)len + 1) {
		c->trunc = 1;
		goto done;
	}
	off -= len;
	bpf_probe_read_kernel(&s->buf[off & SCRATCH_MASK], len, name);
	off -= 1;
	s->buf[off & SCRATCH_MASK] = '/';
	c->off = off;
	c->dentry = parent;
	return 0;
done:
	c->done = 1;
	return 1;
}

/*
 * Writes the path of (vfsmnt, dentry), as seen from task's root, backwards
 * into the scratch buffer so that it ends at DIR_END. Returns the start
 * offset; the root itself yields an empty run (off == DIR_END).
 */
static __always_inline int walk_path(struct task_struct *task,
				     struct vfsmount *vfsmnt,
				     struct dentry *dentry, bool *trunc)
{
	struct walk_ctx c = {
		.vfsmnt = vfsmnt,
		.dentry = dentry,
		.root_dentry = BPF_CORE_READ(task, fs, root.dentry),
		.root_mnt = BPF_CORE_READ(task, fs, root.mnt),
		.off = DIR_END,
	};

	if (no_bpf_loop) {
		__u32 zero = 0;
		struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);

		if (!s) {
			*trunc = true;
			return DIR_END;
		}
		s->walk = c;
		/* Not unrolled: one copy of the step, verified per iteration. */
#pragma clang loop unroll(disable)
		for (__u32 i = 0; i < MAX_WALK; i++)
			if (walk_step(i, &s->walk))
				break;
		c = s->walk;
	} else {
		bpf_loop(MAX_WALK, walk_step, &c, 0);
	}
	if (c.trunc || !c.done)
		*trunc = true;
	if (c.off < 0 || c.off > DIR_END)
		return DIR_END;
	return c.off;
}

/* Copies buf[off, end) into dst as a string; "/" when the run is empty. */
static __always_inline bool copy_run(char *dst, char *buf, int off, int end)
{
	bool trunc = false;
	int len = end - off;

	if (len <= 0) {
		dst[0] = '/';
		dst[1] = 0;
		return false;
	}
	if (len > PATH_LEN - 1) {
		len = PATH_LEN - 1;
		trunc = true;
	}
	len &= PATH_LEN - 1;
	bpf_probe_read_kernel(dst, len, &buf[off & SCRATCH_MASK]);
	dst[len & (PATH_LEN - 1)] = 0;
	return trunc;
}

static __always_inline struct file *task_fd_file(struct task_struct *task, int fd)
{
	struct file **fds;
	struct file *file = NULL;
	struct fdtable *fdt;

	if (fd < 0)
		return NULL;
	fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	return file;
}

/* Mount id of the mount an fd refers to (an open_tree/fsmount tree), or 0. */
static __always_inline __s32 fd_mnt_id(int fd)
{
	struct file *file = task_fd_file(current_task(), fd);
	struct vfsmount *vfsmnt;

	if (!file)
		return 0;
	vfsmnt = BPF_CORE_READ(file, f_path.mnt);
	if (!vfsmnt)
		return 0;
	return BPF_CORE_READ(real_mount(vfsmnt), mnt_id);
}

/* Writes the path an fd refers to into dst; returns true when truncated. */
static __always_inline bool resolve_fd_path(char *dst, struct file *file);

#define PROCFD_PREFIX "/proc/self/fd/"
#define PROCFD_PREFIX_LEN 14

/*
 * runc and other runtimes mount onto "/proc/self/fd/N" (an O_PATH fd they
 * opened safely inside the rootfs), so the string says nothing about where
 * the mount lands. Such a path is resolved through the fd, in the kernel,
 * while the fd is still open. Returns -1 when upath is not of that form.
 */
static __always_inline int procfd_of(const char *upath)
{
	char buf[PROCFD_PREFIX_LEN + 8] = {};
	const char prefix[] = PROCFD_PREFIX;
	int fd = 0;

	if (bpf_probe_read_user_str(buf, sizeof(buf), upath) <= PROCFD_PREFIX_LEN)
		return -1;
#pragma unroll
	for (int i = 0; i < PROCFD_PREFIX_LEN; i++)
		if (buf[i] != prefix[i])
			return -1;
#pragma unroll
	for (int i = PROCFD_PREFIX_LEN; i < PROCFD_PREFIX_LEN + 7; i++) {
		char c = buf[i];

		if (c == 0)
			return fd;
		if (c < '0' || c > '9')
			return -1;
		fd = fd * 10 + (c - '0');
	}
	return -1; /* more digits than any fd has */
}

/*
 * Makes the user path upath absolute against dirfd (AT_FDCWD: the cwd) and
 * writes it into dst (PATH_LEN bytes). An empty upath yields the directory
 * itself (AT_EMPTY_PATH); "/proc/self/fd/N" yields the path of fd N.
 * Returns true when the result was truncated.
 */
static __always_inline bool resolve_user_path(char *dst, int dirfd,
					      const char *upath)
{
	struct task_struct *task = current_task();
	struct vfsmount *vfsmnt;
	struct dentry *dentry;
	bool trunc = false;
	char first = 0;
	char *buf;
	int off, end = DIR_END;
	long n;

	dst[0] = 0;
	if (upath && bpf_probe_read_user(&first, 1, upath) < 0)
		return false;
	if (first == '/') {
		int fd = procfd_of(upath);
		struct file *file = fd >= 0 ? task_fd_file(task, fd) : NULL;

		if (file)
			return resolve_fd_path(dst, file);
		return read_user_str(dst, PATH_LEN, upath);
	}

	if (dirfd == AT_FDCWD) {
		vfsmnt = BPF_CORE_READ(task, fs, pwd.mnt);
		dentry = BPF_CORE_READ(task, fs, pwd.dentry);
	} else {
		struct file *file = task_fd_file(task, dirfd);

		if (!file)
			return read_user_str(dst, PATH_LEN, upath);
		vfsmnt = BPF_CORE_READ(file, f_path.mnt);
		dentry = BPF_CORE_READ(file, f_path.dentry);
	}
	buf = scratch_buf();
	if (!buf || !vfsmnt || !dentry)
		return read_user_str(dst, PATH_LEN, upath);

	off = walk_path(task, vfsmnt, dentry, &trunc);
	if (first) {
		buf[DIR_END] = '/';
		n = bpf_probe_read_user_str(&buf[DIR_END + 1], PATH_LEN, upath);
		if (n > 1)
			end = DIR_END + n; /* DIR_END + 1 + (n - 1) */
		if (n == PATH_LEN)
			trunc = true;
	}
	return copy_run(dst, buf, off, end) || trunc;
}

/* Writes the path an fd refers to into dst; returns true when truncated. */
static __always_inline bool resolve_fd_path(char *dst, struct file *file)
{
	struct task_struct *task = current_task();
	struct vfsmount *vfsmnt = BPF_CORE_READ(file, f_path.mnt);
	struct dentry *dentry = BPF_CORE_READ(file, f_path.dentry);
	bool trunc = false;
	char *buf = scratch_buf();
	int off;

	dst[0] = 0;
	if (!buf || !vfsmnt || !dentry)
		return false;
	off = walk_path(task, vfsmnt, dentry, &trunc);
	return copy_run(dst, buf, off, DIR_END) || trunc;
}

#endif /* __MNTLEAK_PATH_BPF_H__ */
