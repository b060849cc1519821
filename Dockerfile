# mntleak's container image: the static binary alone, FROM scratch.
#
# Why the binary is built on the host and copied, not built in a stage:
# no registry is reachable from the machines this repository builds on, so
# there is no golang base image to pull, and a builder image made locally
# would be a copy of the host's Go toolchain and module cache (hundreds of
# MiB through the build context) to produce the same bytes. `make image`
# builds bin/image/mntleak with CGO_ENABLED=0 -trimpath (static, no host
# paths, the version stamped from VERSION) and this file only packs it, so
# the build pulls nothing: scratch is Docker's empty image, not a download.
#
# The image has no shell, no libc and no CA certificates (mntleak talks to
# no TLS endpoint of its own; the Kubernetes API client reads the service
# account's CA from its mounted token directory).
#
# User: root (uid 0) with every capability dropped but the five the daemon
# needs, set by the DaemonSet (docker run --cap-drop ALL --cap-add ...):
#   BPF, PERFMON      load and attach the tp_btf/raw tracepoint programs,
#                     read the ring buffer;
#   SYS_ADMIN         bpf() and perf events where BPF/PERFMON are unknown
#                     (kernels before 5.8, Docker 20.10's capability list);
#   SYS_PTRACE,       read every process's /proc/PID/{mountinfo,fd,maps,
#   DAC_READ_SEARCH   root,cwd}, and the node's files through /proc/1/root
#                     (mntleak why and audit in kubectl exec).
# A non-root user cannot be used: Kubernetes grants added capabilities to
# a non-root container's bounding set only (ambient capabilities are not
# supported), and file capabilities on the binary would make it fail to
# exec (EPERM) wherever the five are not all granted (mntleak replay or
# version run by hand); the state dir the kubelet creates is root's 0755.
# The DaemonSet runs it unprivileged, without privilege escalation, on a
# read-only root filesystem.
FROM scratch
COPY mntleak /mntleak
ENTRYPOINT ["/mntleak"]
CMD ["trace"]
