module github.com/mntleak/mntleak

go 1.26.8

tool github.com/cilium/ebpf/cmd/bpf2go

require (
	github.com/cilium/ebpf v0.22.0
	github.com/moby/sys/mountinfo v0.7.2
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)

require go.uber.org/multierr v1.10.0 // indirect
