#!/bin/bash
# down.sh — remove every trace of the node up.sh made: pods deleted through the kubelet (so it unmounts
# their volumes and runs the CNI DEL), then the sandboxes it left through the CRI, every daemon stopped
# by the pid up.sh recorded (containerd's shims found by their -address), mounts under the kubelet root
# and the node's paths unmounted, the CNI bridge, the kubelet's KUBE-* iptables chains, the kubepods
# cgroups, the sysctls and the host paths up.sh found absent restored, and the state removed. The last
# run's logs are kept in the cache (last-logs) for a post-mortem. Idempotent; exit 1 if a trace stays.
#   DOWN_WAIT=<s>  how long the kubelet gets to delete the pods before they are forced (default 60)
source "$(dirname "$(readlink -f "$0")")/env.sh"
say() { echo "k8s-node down: [${SECONDS}s] $*"; }  # the time since down.sh started: where a slow run went
stop() { # name: TERM, up to 10s, then KILL
  local n=$1 p
  if ! alive "$n"; then rm -f "$RUN/$n.pid"; return 0; fi
  p=$(cat "$RUN/$n.pid"); kill -TERM "$p"
  for _ in $(seq 200); do running "$p" || break; sleep 0.05; done
  running "$p" && kill -KILL "$p" && say "killed $n ($p)"
  rm -f "$RUN/$n.pid"; say "stopped $n ($p)"
}
[ -d "$STATE" ] || [ -d /run/mntleak-k8s ] || { say "not up"; exit 0; }

# 1. the kubelet deletes the pods while everything runs (DaemonSets first, or their pods come back)
if alive kube-apiserver && alive kubelet; then
  kubectl delete daemonsets,deployments,replicasets,jobs --all -A --wait=false >/dev/null 2>&1
  kubectl delete pods --all -A --grace-period=1 --wait=false >/dev/null 2>&1
  for _ in $(seq "${DOWN_WAIT:-60}"); do [ -z "$(kubectl get pods -A -o name 2>/dev/null)" ] && break; sleep 1; done
  left=$(kubectl get pods -A -o name 2>/dev/null | tr '\n' ' ')
  [ -n "$left" ] && say "pods the kubelet did not delete in ${DOWN_WAIT:-60}s: $left(forcing)"
fi
for d in kube-controller-manager kube-scheduler kubelet; do stop $d; done
# 2. what the kubelet left: sandboxes through the CRI, then containers and tasks through containerd
if alive containerd; then
  crimini "$CTR_SOCK" rmall || say "crimini rmall failed"
  for c in $(ctr --address "$CTR_SOCK" -n k8s.io containers ls -q 2>/dev/null); do
    ctr --address "$CTR_SOCK" -n k8s.io tasks kill -s KILL "$c" >/dev/null 2>&1; sleep 0.2
    ctr --address "$CTR_SOCK" -n k8s.io tasks rm -f "$c" >/dev/null 2>&1
    ctr --address "$CTR_SOCK" -n k8s.io containers rm "$c" >/dev/null 2>&1
  done
fi
stop containerd
for d in /proc/[0-9]*; do   # this containerd's shims (their command line names its socket), by pid
  [ "$(readlink "$d/exe" 2>/dev/null)" = /usr/bin/containerd-shim-runc-v2 ] || continue
  if tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -qF -- "-address $CTR_SOCK "; then
    kill -KILL "${d#/proc/}" 2>/dev/null && say "killed shim ${d#/proc/}"
  fi
done
stop kube-apiserver
stop etcd
# 3. mounts under the kubelet root and the node's own paths, deepest first
for root in "$KUBELET_ROOT" /run/mntleak-k8s "$STATE"; do
  for _ in 1 2 3; do
    mounts=$(awk -v r="$root" '$5 == r || index($5, r "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
    [ -z "$mounts" ] && break
    for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  done
done
# 4. network, iptables, cgroups, sysctls
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE" && say "deleted bridge $BRIDGE"
for ipt in iptables ip6tables; do
  command -v $ipt >/dev/null || continue
  for t in filter nat mangle; do
    $ipt -t $t -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE-' | grep -vE '^-A KUBE-' | sed 's/^-A /-D /' |
      while read -r rule; do eval "$ipt -t $t $rule"; done
    chains=$($ipt -t $t -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}')
    for c in $chains; do $ipt -t $t -F "$c"; done
    for c in $chains; do $ipt -t $t -X "$c"; done
  done
done
for h in /sys/fs/cgroup/*/kubepods; do
  [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
done
if [ -f "$RUN/sysctl-before" ]; then
  sed 's/ = /=/' "$RUN/sysctl-before" | xargs -r sysctl -q -w && say "restored sysctls"
fi
# 5. state, logs kept in the cache, host paths that were not there before up
if [ -d "$LOG" ]; then rm -rf "$CACHE/last-logs"; mkdir -p "$CACHE"; cp -a "$LOG" "$CACHE/last-logs"; fi
before=$(cat "$RUN/host-before" 2>/dev/null)
bad=0
for d in $DAEMONS; do [ -f "$RUN/$d.pid" ] && running "$(cat "$RUN/$d.pid")" && { say "left: $d (pid $(cat "$RUN/$d.pid"))"; bad=1; }; done
for p in $HOST_PATHS; do
  grep -qxF "$p" <<<"$before" && continue
  case $p in
    /run/netns|/run/containerd|/run/containerd/s) rmdir "$p" 2>/dev/null ;;  # shared with others: only if empty
    *) rm -rf --one-file-system "$p" ;;  # never through a mount that stayed
  esac
done
rm -rf --one-file-system "$STATE"
# 6. anything left is an error
grep -E " ($KUBELET_ROOT|/run/mntleak-k8s|$STATE)[/ ]" /proc/self/mountinfo && { say "left: mounts"; bad=1; }
ip link show "$BRIDGE" >/dev/null 2>&1 && { say "left: bridge $BRIDGE"; bad=1; }
[ -e "$KUBELET_ROOT" ] && ! grep -qxF "$KUBELET_ROOT" <<<"$before" && { say "left: $KUBELET_ROOT"; bad=1; }
[ $bad = 0 ] && say "node gone"
exit $bad
