#!/bin/bash
# up.sh — bring the single-node Kubernetes up from the cached binaries (build.sh): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd (CRI) and the kubelet, all on loopback. Idempotent:
# with every daemon alive and the node Ready it returns at once. Prints the elapsed time of each step.
# Layout: env.sh. MNTLEAK_K8S_OWNER (a pid) is recorded so a test binary knows it started the node.
set -euo pipefail
source "$(dirname "$(readlink -f "$0")")/env.sh"
t0=$(date +%s%N)
ts() { printf '[%5.1fs] %s\n' "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" "$*"; }
fail() { echo "k8s-node up: $*" >&2; exit 1; }
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl crimini; do
  [ -x "$BIN/$c" ] || fail "$BIN/$c missing: run e2e/k8snode/build.sh (make k8s-node) first"
done
[ -f "$IMG/pause.tar" ] && [ -f "$IMG/busybox.tar" ] || fail "images missing in $IMG: run e2e/k8snode/build.sh"
for c in etcd containerd runc ctr iptables openssl curl; do command -v $c >/dev/null || fail "$c not found (make deps)"; done
[ -x /usr/lib/cni/bridge ] || fail "/usr/lib/cni/bridge not found: install containernetworking-plugins (make deps)"

# the pods' network and the kubernetes Service in pods, as kube-proxy makes it on a real node: an in-cluster
# client (a DaemonSet's pod with its ServiceAccount token) dials $SERVICE_IP:443, routed through the bridge
# (the CNI config's only route) and DNAT'd to the API server on 127.0.0.1:6443. The bridge is made before the
# CNI plugin (which takes it as it is) so that it may route to loopback (route_localnet, on it alone);
# down.sh deletes the bridge and the KUBE-* chains. Also on a node already up.
put() { # write stdin to $1 if it differs (containerd and the kubelet watch their configs)
  local t; t=$(mktemp "$RUN/put.XXXXXX"); cat > "$t"
  if cmp -s "$t" "$1"; then rm -f "$t"; else chmod 644 "$t"; mv -f "$t" "$1"; fi
}
service_route() {
  put "$ETC/cni/10-mntleak-k8s.conflist" <<C
{"cniVersion":"1.0.0","name":"mntleak-k8s","plugins":[
 {"type":"bridge","bridge":"$BRIDGE","isGateway":true,"ipMasq":false,"hairpinMode":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$POD_CIDR"}]],"dataDir":"$STATE/cni-ipam",
   "routes":[{"dst":"$SERVICE_CIDR","gw":"$POD_GW"}]}}]}
C
  ip link show "$BRIDGE" >/dev/null 2>&1 || { ip link add "$BRIDGE" type bridge && ip link set "$BRIDGE" up; }
  sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"
  iptables -t nat -N KUBE-MNTLEAK-SERVICES 2>/dev/null || true
  iptables -t nat -C PREROUTING -j KUBE-MNTLEAK-SERVICES 2>/dev/null || iptables -t nat -A PREROUTING -j KUBE-MNTLEAK-SERVICES
  local rule=(-i "$BRIDGE" -d "$SERVICE_IP/32" -p tcp --dport 443 -j DNAT --to-destination 127.0.0.1:6443)
  iptables -t nat -C KUBE-MNTLEAK-SERVICES "${rule[@]}" 2>/dev/null || iptables -t nat -A KUBE-MNTLEAK-SERVICES "${rule[@]}"
}
ready() { kubectl get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; }
all=1; for d in $DAEMONS; do alive $d || all=0; done
if [ $all = 1 ] && ready; then service_route; ts "node $NODE already up"; exit 0; fi

# before anything is made: which fixed host paths exist, and the sysctls (down restores both)
if [ ! -f "$RUN/host-before" ]; then
  before=$(for p in $HOST_PATHS; do [ -e "$p" ] && echo "$p"; done || true)
  mkdir -p "$RUN"; echo "$before" > "$RUN/host-before"
fi
mkdir -p "$ETC/cni" "$PKI" "$LOG" "$CTRD_RUN"
[ -f "$RUN/sysctl-before" ] || sysctl -e $SYSCTLS > "$RUN/sysctl-before"
[ -n "${MNTLEAK_K8S_OWNER:-}" ] && echo "$MNTLEAK_K8S_OWNER" > "$RUN/owner"

waitfor() { # what timeout-seconds cmd...: poll every 0.2s; on timeout print the log of the daemon named first
  local what=$1 to=$2 i=0; shift 2
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1)); if [ $i -gt $((to * 5)) ]; then
      local l=${what%% *}; [ -f "$LOG/$l.log" ] || l=kubelet
      echo "--- tail of $LOG/$l.log" >&2; tail -n 20 "$LOG/$l.log" >&2 || true
      fail "no $what within ${to}s"
    fi
    sleep 0.2
  done
  ts "$what ready"
}
start() { # name argv...: in a session of its own, pid in $RUN/name.pid, log in $LOG/name.log
  local n=$1; shift
  if alive "$n"; then return 0; fi
  setsid "$@" >>"$LOG/$n.log" 2>&1 </dev/null &
  echo $! > "$RUN/$n.pid"
  ts "started $n (pid $!)"
}
hex() { head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# ---- PKI, static tokens, kubeconfigs (once per state) ----
if [ ! -f "$PKI/ca.crt" ]; then
  ( cd "$PKI"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=mntleak-k8s-ca
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver
    echo "subjectAltName=IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" > san.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile san.ext
    openssl genrsa -out sa.key 2048; openssl rsa -in sa.key -pubout -out sa.pub ) >/dev/null 2>&1
  chmod 600 "$PKI"/*.key
  ts "made the PKI"
fi
if [ ! -f "$ETC/tokens.csv" ]; then
  : > "$ETC/tokens.csv"; chmod 600 "$ETC/tokens.csv"
  # kubeconfig-name user groups
  while read -r name user groups; do
    tok=$(hex); echo "$tok,$user,$user,$groups" >> "$ETC/tokens.csv"
    cat > "$ETC/$name.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: mntleak-k8s, cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$PKI/ca.crt"}}]
users: [{name: $name, user: {token: "$tok"}}]
contexts: [{name: mntleak-k8s, context: {cluster: mntleak-k8s, user: $name}}]
current-context: mntleak-k8s
KC
    chmod 600 "$ETC/$name.kubeconfig"
  done <<U
admin admin system:masters
kubelet system:node:$NODE system:nodes
controller-manager system:kube-controller-manager system:authenticated
scheduler system:kube-scheduler system:authenticated
U
  ts "made the tokens and kubeconfigs"
fi

put "$ETC/containerd.toml" <<T
version = 2
root = "$STATE/containerd"
state = "$CTRD_RUN"
[grpc]
  address = "$CTR_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  stream_server_address = "127.0.0.1"
  # root here lacks CAP_SYS_RESOURCE: the sandbox's oom_score_adj -998 makes runc init die
  # ("can't get final child's PID from pipe: EOF"); clamp every oom_score_adj to containerd's own
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$ETC/cni"
T
put "$ETC/kubelet.yaml" <<K
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
# cgroup v1 and no systemd here
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$CTR_SOCK
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
syncFrequency: 10s
fileCheckFrequency: 10s
volumePluginDir: $STATE/volume-plugins
podLogsDir: $STATE/pod-logs
K

# ---- etcd, the API server, the controllers ----
start etcd etcd --name mntleak-k8s --data-dir "$STATE/etcd" --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster mntleak-k8s=http://127.0.0.1:2380 \
  --listen-metrics-urls http://127.0.0.1:2381 --quota-backend-bytes 2147483648
waitfor "etcd" 30 curl -sf http://127.0.0.1:2379/health
start kube-apiserver kube-apiserver --etcd-servers=http://127.0.0.1:2379 \
  --bind-address=127.0.0.1 --secure-port=6443 --service-cluster-ip-range=$SERVICE_CIDR \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
  --token-auth-file="$ETC/tokens.csv" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --allow-privileged=true --kubelet-preferred-address-types=Hostname,InternalIP --profiling=false -v=1
waitfor "kube-apiserver" 120 curl -sf --cacert "$PKI/ca.crt" https://127.0.0.1:6443/readyz
# the DaemonSet controller makes pods, the token controller the default ServiceAccounts and
# kube-root-ca.crt, as on a real cluster (every controller runs with its own service account)
start kube-controller-manager kube-controller-manager --kubeconfig="$ETC/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$ETC/controller-manager.kubeconfig" --authorization-kubeconfig="$ETC/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" --profiling=false -v=1
start kube-scheduler kube-scheduler --kubeconfig="$ETC/scheduler.kubeconfig" \
  --authentication-kubeconfig="$ETC/scheduler.kubeconfig" --authorization-kubeconfig="$ETC/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --profiling=false -v=1

# ---- the pods' network, containerd and the local images (no registry) ----
service_route; ts "pod network and kubernetes Service $SERVICE_IP:443 (to the API server) ready"
start containerd containerd --config "$ETC/containerd.toml"
waitfor "containerd" 30 ctr --address "$CTR_SOCK" version
have=$(ctr --address "$CTR_SOCK" -n k8s.io images ls -q)
for ref in registry.k8s.io/pause:3.10=pause docker.io/library/busybox:k8slab=busybox; do
  grep -qxF "${ref%=*}" <<<"$have" && continue
  ctr --address "$CTR_SOCK" -n k8s.io images import "$IMG/${ref#*=}.tar" >/dev/null
  ts "imported ${ref%=*}"
done

# ---- the kubelet ----
mkdir -p "$KUBELET_ROOT"
start kubelet kubelet --config="$ETC/kubelet.yaml" --kubeconfig="$ETC/kubelet.kubeconfig" \
  --root-dir="$KUBELET_ROOT" --hostname-override="$NODE" -v="${KUBELET_V:-3}"
waitfor "kubelet healthz" 60 curl -sf http://127.0.0.1:10248/healthz
waitfor "kube-controller-manager healthz" 60 curl -sfk https://127.0.0.1:10257/healthz
waitfor "kube-scheduler healthz" 60 curl -sfk https://127.0.0.1:10259/healthz
waitfor "node $NODE Ready" 120 ready
waitfor "kube-controller-manager: ServiceAccount default/default" 60 kubectl get serviceaccount default -n default
waitfor "kube-controller-manager: ConfigMap default/kube-root-ca.crt" 60 kubectl get configmap kube-root-ca.crt -n default
ts "node $NODE up"
