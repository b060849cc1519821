# mntleak: two entry points for a fresh machine (see README.md):
#   make run    build and run the tracer (root)
#   make test   install what the tests need, check, and run every test (root)

GO       ?= go
BIN      := bin/mntleak
ARGS     ?= trace
PKGS     := ./...
# Debian packages: clang/llvm/libbpf-dev/bpftool regenerate the BPF objects;
# util-linux, e2fsprogs and coreutils are what the privileged tests drive;
# docker.io (dockerd, containerd, runc), busybox-static and iproute2 are the
# real components of the incident reproductions (e2e/docker/).
# qemu-system-x86, qemu-system-arm, qemu-utils and mmdebstrap run the lab guests (e2e/qemu/).
# containerd, runc, etcd-server, containernetworking-plugins, iptables,
# conntrack, socat, openssl, curl and gcc run the Kubernetes node (e2e/k8snode/).
APT_PKGS := clang llvm libbpf-dev bpftool util-linux mount e2fsprogs coreutils docker.io busybox-static iproute2 ruby qemu-system-x86 qemu-system-arm qemu-utils mmdebstrap \
	containerd runc etcd-server containernetworking-plugins iptables conntrack socat openssl curl gcc
APT_CMDS := clang llvm-strip bpftool losetup unshare nsenter pivot_root mkfs.ext4 blockdev dockerd docker containerd runc busybox ip ruby qemu-system-x86_64 qemu-system-aarch64 qemu-img mmdebstrap debugfs \
	etcd ctr iptables conntrack socat openssl curl gcc /usr/lib/cni/bridge

.PHONY: all build run test oracle-total deps lint arm64 vet fmt-check staticcheck generate check-generated unit clean lab lab-bench lab-vagrant fuzz bench bench-quick bench-bin soak k8s-node k8s-node-down k8s-events image image-tar chart manifest helm mutation

all: build

build:
	$(GO) build -o $(BIN) ./cmd/mntleak

## run: build and trace: on a terminal, a start line and then each finding
## in its short form (pass flags with ARGS="trace --events", ARGS="trace --format json").
run: build
	./$(BIN) $(ARGS)

## test: everything CI runs, under the race detector (the daemon the
## privileged tests start is built with it too). Privileged tests skip
## without root/BPF unless MNTLEAK_REQUIRE_BPF=1, where they fail instead.
## The run fails if it leaves a mount, loop device or temp dir behind.
## Every finding of a privileged test is compared with the oracle
## (e2e/oracle); each test appends its count to ORACLE_LOG, totalled after.
## A test runs a scenario again only when its tracer reported lost events
## (never for a wrong verdict); each rerun is appended to $(RERUNS)
## (privtest.Rerun) and the run ends with one line: reruns: N (which, why).
## The packages that drive the test Kubernetes node run after the others,
## one at a time: a private namespace another package's test makes while
## a pod tears down holds a copy of its volume (a real leak) and keeps the
## pod Terminating, and a loaded machine delays the daemon in its pod.
K8S_PKGS  := ./deploy/incluster ./e2e/k8s ./e2e/k8snode
LEFTOVERS := bin/.leftovers-before
ORACLE_LOG := $(CURDIR)/bin/oracle.log
RERUNS    := $(CURDIR)/bin/.reruns
test: deps lint check-generated
	@mkdir -p bin && $(GO) run ./e2e/testkit/leftovers save $(LEFTOVERS) && : > $(ORACLE_LOG) && : >$(RERUNS)
	@rc=0; k8s=$$($(GO) list $(K8S_PKGS)); \
	MNTLEAK_ORACLE_LOG=$(ORACLE_LOG) MNTLEAK_RERUNS=$(RERUNS) $(GO) test -race -count=1 -timeout 30m $$($(GO) list $(PKGS) | grep -vxF "$$k8s") || rc=$$?; \
	MNTLEAK_ORACLE_LOG=$(ORACLE_LOG) MNTLEAK_RERUNS=$(RERUNS) $(GO) test -race -count=1 -timeout 30m -p 1 $$k8s || rc=$$?; \
	$(MAKE) -s oracle-total; \
	n=$$(grep -c . $(RERUNS)); if [ "$$n" -eq 0 ]; then echo "reruns: 0"; else echo "reruns: $$n ($$(paste -sd';' $(RERUNS) | sed 's/;/; /g'))"; fi; \
	$(GO) run ./e2e/testkit/leftovers check $(LEFTOVERS) || rc=1; exit $$rc

## oracle-total: the oracle's comparisons of the last make test, in one line.
oracle-total:
	@awk '{ n += $$(NF-5); m += $$(NF-3); k += $$(NF-1); pkg[$$2] = 1 } \
	END { printf "oracle: %d comparisons in %d packages, %d disagreements (%d not checkable: the state had moved)\n", n, length(pkg), m, k }' $(ORACLE_LOG)

## unit: the tests that need neither root nor BPF (privileged ones skip).
unit:
	MNTLEAK_REQUIRE_BPF= $(GO) test -count=1 $(PKGS)

## deps: install the Debian packages the tests and generation need, only if
## one of their commands is missing.
deps:
	@missing=""; for c in $(APT_CMDS); do command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing packages for:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PKGS) >/dev/null; \
	fi

lint: fmt-check vet staticcheck arm64

## arm64: the arm64 build (BPF objects, syscall tables) compiles and vets.
arm64:
	GOARCH=arm64 $(GO) build ./...
	GOARCH=arm64 $(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

## generate: the syscall tables (internal/gensyscalls) and bpf/*.bpf.c
## compiled with bpf2go for amd64 and arm64 (needs clang); outputs are committed.
generate:
	cd tracer && $(GO) generate

## check-generated: the committed objects must be what the sources produce.
check-generated: generate
	@git diff --exit-code --stat -- tracer/ bpf/syscall_nr.h event/syscalls_amd64.go event/syscalls_arm64.go || { echo "generated BPF objects or syscall tables are stale: run make generate and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- tracer/ bpf/ event/); if [ -n "$$untracked" ]; then echo "generated files not committed: $$untracked"; exit 1; fi

## mutation: the mutation score of correlate/ and release/ (gremlins, a
## tool in go.mod) against the tests that need no root, run as nobody under
## nice -n 19 with MUTATION_WORKERS workers (1); not part of make test. MUTATION_FILES="leak.go
## settle.go" narrows it; the JSON and the table go to bin/mutation
## (docs/mutation.md: how to read it, the scores, the equivalent mutants).
mutation:
	GO=$(GO) e2e/testkit/mutation/run.sh

## fuzz: every fuzz target for FUZZTIME (their seeds also run in make test).
FUZZTIME ?= 30s
FUZZ_TARGETS := FuzzDecode:./event FuzzFindingLine:./correlate FuzzParseDev:./event FuzzRead:./stream FuzzMountinfo:./correlate FuzzParseTarget:./cmd/mntleak
fuzz:
	@for t in $(FUZZ_TARGETS); do name=$${t%%:*}; pkg=$${t#*:}; echo "== $$name $$pkg"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; done

## lab: the QEMU lab (e2e/qemu/, docs/lab.md): a Debian guest with real
## systemd for each of Debian's 5.10, 6.1 and 6.12 cloud kernels runs the
## systemd and device-mapper seeds under mntleak's own unit (one of them
## under --buffer=perf); the images are cached in /var/cache/mntleak-lab
## (kernel-K/ for 5.10 and 6.12), each rebuilt when its recipe changes.
## An arm64 guest (qemu-system-aarch64, busybox initramfs) loads the arm64
## objects and explains a leak. The table of findings goes to
## bin/lab-results.md; LAB_ARGS=-update also rewrites docs/lab.md's
## generated blocks. make lab runs every kernel; make test (CI) 6.1 and
## one other x86 kernel a day (LAB_KERNELS chooses: README, Lab). make lab
## runs each scenario on both hook paths (docs/hooks.md) where the kernel
## has BPF trampolines, and boots each x86 kernel once more for the paths'
## start-up and TestHooksSameEvents (TestLabHooks, guest/hooks.sh).
LAB_ARGS ?=
LAB_KERNELS ?= all
lab: deps
	LAB_KERNELS=$(LAB_KERNELS) LAB_HOOKS=both $(GO) test -count=1 -v -timeout 180m -run '^TestLab(Guest|Arm64|Hooks)$$' ./e2e/qemu $(LAB_ARGS)

## k8s-node: a real single-node Kubernetes (e2e/k8snode/): builds what the cache
## (/var/cache/mntleak-k8s/v<version>) lacks from the Go module proxy (5 min
## on 2 idle cores the first time, well under a second after), then starts
## etcd, the API server, controller-manager, scheduler, containerd and the
## kubelet (12 s to a Ready node). KUBECONFIG=/var/lib/mntleak-k8s/etc/admin.kubeconfig
k8s-node: deps
	e2e/k8snode/build.sh
	e2e/k8snode/up.sh

## k8s-node-down: delete the pods through the kubelet, stop the node and
## remove every trace of it (mounts, bridge, iptables chains, sysctls, state).
k8s-node-down:
	e2e/k8snode/down.sh

## k8s-events: the node's Events and pods, and the kubelet's last log lines.
k8s-events:
	e2e/k8snode/events.sh -l

## lab-vagrant: the Vagrant lab VMs for other kernels (needs Vagrant and VirtualBox on the host).
## lab-bench: hookbench (e2e/qemu/guest/hookbench) in the lab guest of
## LAB_KERNEL (6.1 by default; 6.12), one boot: no tracer, the empty
## sys_exit program, mntleak on each hook path and bpftrace (its Debian
## packages downloaded once), LAB_BENCH_ROUNDS rounds; results in
## bin/lab/bench-KERNEL/out/hookbench.txt (docs/BENCHMARKS.md).
LAB_KERNEL ?= 6.1
LAB_BENCH_ROUNDS ?= 3
lab-bench: deps
	mkdir -p bin/lab-bench
	CGO_ENABLED=0 $(GO) build -o bin/lab-bench/mntleak ./cmd/mntleak
	CGO_ENABLED=0 $(GO) build -o bin/lab-bench/hookbench ./e2e/qemu/guest/hookbench
	echo $(LAB_BENCH_ROUNDS) >bin/lab-bench/hookbench.rounds
	rm -rf bin/lab/bench-$(LAB_KERNEL)
	LAB_KERNEL=$(LAB_KERNEL) bash e2e/qemu/lab.sh bench bin/lab-bench bin/lab/bench-$(LAB_KERNEL)
	cat bin/lab/bench-$(LAB_KERNEL)/out/hookbench.txt

lab-vagrant:
	vagrant up

## bench: the benchmark (root, about 12 minutes): no tracer, an empty BPF
## program, mntleak and bpftrace in interleaved rounds; the table goes to
## stdout and replaces the Results section of docs/BENCHMARKS.md.
## bench-quick: the reduced run for CI (under 2 minutes); both exit non-zero
## when a hard target fails (events lost in the storm, findings in churn).
BENCH_BIN := bin/mntleak-bench
bench-bin: build
	$(GO) build -o $(BENCH_BIN) ./cmd/mntleak-bench
	@missing=""; for c in bpftrace dockerd busybox; do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bpftrace docker.io busybox-static >/dev/null; fi

bench: bench-bin
	./$(BENCH_BIN) -mntleak $(BIN) -markdown docs/BENCHMARKS.md $(BENCH_ARGS)

bench-quick: bench-bin
	./$(BENCH_BIN) -quick -mntleak $(BIN) $(BENCH_ARGS)

## soak: one daemon for SOAK (default 10m) under mount storms, container
## churn and injected failures; fails unless RSS stays flat, nothing is
## lost, every injected failure is explained and no mount is left behind.
## The figures replace the Soak section of docs/BENCHMARKS.md.
SOAK ?= 10m
soak: bench-bin
	./$(BENCH_BIN) soak -duration $(SOAK) -mntleak $(BIN) -markdown docs/BENCHMARKS.md $(SOAK_ARGS)

## image: mntleak:VERSION (the VERSION file) with the local Docker Engine,
## FROM scratch, pulling nothing; a private dockerd is started (and
## stopped) when none answers (deploy/image/image.sh says how).
## image-tar: also bin/mntleak-VERSION.oci.tar, for docker load and
## ctr images import (push to a registry of one's own: docs/kubernetes.md).
image:
	GO=$(GO) deploy/image/image.sh build

image-tar:
	GO=$(GO) deploy/image/image.sh tar

## helm: the helm CLI, built once into /var/cache/mntleak-helm (not in
## go.mod). chart: helm lint --strict. manifest: deploy/kubernetes/daemonset.yaml
## from the chart (go test ./deploy fails when they drift).
helm:
	@GO=$(GO) deploy/helm/helm.sh path

chart:
	GO=$(GO) deploy/helm/helm.sh lint

manifest:
	GO=$(GO) deploy/helm/helm.sh render > deploy/kubernetes/daemonset.yaml.tmp
	mv deploy/kubernetes/daemonset.yaml.tmp deploy/kubernetes/daemonset.yaml

clean:
	rm -rf bin
