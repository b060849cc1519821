# env.sh — sourced by up.sh, down.sh and events.sh: where the node lives. Nothing here is started.
#   binaries/images (kept):  /var/cache/mntleak-k8s/v$V/{bin,img}  (build.sh; last run's logs in .../last-logs)
#   state (removed by down): /var/lib/mntleak-k8s/{pki,etc,etcd,containerd,cni-ipam,pod-logs,logs,run}
#   containerd socket/state: /run/mntleak-k8s/containerd (not /run/containerd, which a Docker Engine's
#                            containerd uses); kubelet root: /var/lib/kubelet, as on a real node.
V=${K8S_VERSION:-1.37.2}
CACHE=${MNTLEAK_K8S_CACHE:-/var/cache/mntleak-k8s}/v$V
BIN=$CACHE/bin; IMG=$CACHE/img
STATE=/var/lib/mntleak-k8s
ETC=$STATE/etc; PKI=$STATE/pki; RUN=$STATE/run; LOG=$STATE/logs
CTRD_RUN=/run/mntleak-k8s/containerd
CTR_SOCK=$CTRD_RUN/containerd.sock
KUBELET_ROOT=/var/lib/kubelet
BRIDGE=mntleak-k8s0
POD_CIDR=10.244.0.0/24 POD_GW=10.244.0.1
# the kubernetes Service's ClusterIP (the first of the API server's --service-cluster-ip-range): up.sh makes it
# answer in pods as kube-proxy would (a DNAT to the API server on loopback), for in-cluster clients; pods route
# the service range (only) through the bridge (POD_GW, the bridge's address)
SERVICE_CIDR=10.96.0.0/16 SERVICE_IP=10.96.0.1
NODE=$(hostname | tr 'A-Z' 'a-z')
# sysctls the kubelet and the bridge plugin change: saved at the first up, restored by down
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward"
# host paths the kubelet, containerd and CNI create at fixed places: removed by down if up made them
HOST_PATHS="/var/log/pods /var/log/containers /var/lib/cni /run/netns /run/containerd/s /run/containerd /usr/libexec/kubernetes $KUBELET_ROOT /run/mntleak-k8s"
# the daemons in start order (down stops them in reverse)
DAEMONS="etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet"
export PATH=$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin KUBECONFIG=$ETC/admin.kubeconfig
# running PID: alive and not a zombie (pid 1 here reaps the daemons up.sh leaves a second or two late)
running() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; }
# alive NAME: the daemon up.sh started as NAME runs
alive() { [ -f "$RUN/$1.pid" ] && running "$(cat "$RUN/$1.pid")"; }
