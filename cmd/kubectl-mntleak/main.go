package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Exit codes: the node's answer passes through (0 nothing holds, 1 held
// or a leak, 3 nothing found but the node could not be seen); the plugin's
// own are 2 (bad input) and 4 (the cluster could not be asked: no such
// pod, no mntleak pod on the node, RBAC refused).
const (
	exitOK      = 0
	exitUsage   = 2
	exitCluster = 4
)

const usage = `usage: kubectl mntleak <command> [flags]

Asks mntleak's DaemonSet pod on a pod's node, through the API server's exec
subresource (your kubeconfig and RBAC: get and list pods, create pods/exec;
list nodes for audit --all-nodes).

Commands:
  why pod/NAME [-n NS]          what holds the pod's mounts on its node (a pod
                                stuck Terminating too); --pod-uid UID --node N
                                for a pod gone from the API server
  audit --node N | --all-nodes  leaked mounts and risky settings, one block per node
  release pod/NAME [-n NS]      detach the leaked copies that hold the pod's
                                mounts (a plan; --apply acts)

why and release print human lines, or with --format json (--json) one JSON
document; release's action records are in that document, and on the node
(its journal, MNTLEAK_ACTION=release, and the daemon's state dir).

Flags of every command: --kubeconfig, --context, -n/--namespace,
--mntleak-namespace (where the DaemonSet runs; all by default), --selector
(its pods' labels, ` + DefaultSelector + `), --timeout.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, nil))
}

// backend replaces the API server and exec in tests.
type backend struct {
	client kubernetes.Interface
	runner runner
}

// common are the flags of every command.
type common struct {
	kubeconfig, context, namespace string
	daemonNS, selector             string
	timeout                        time.Duration
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file ($KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&c.context, "context", "", "the kubeconfig context")
	fs.StringVar(&c.namespace, "namespace", "", "the pod's namespace (the context's by default)")
	fs.StringVar(&c.namespace, "n", "", "short for --namespace")
	fs.StringVar(&c.daemonNS, "mntleak-namespace", "", "the namespace of mntleak's DaemonSet (all by default)")
	fs.StringVar(&c.selector, "selector", DefaultSelector, "the labels of mntleak's DaemonSet pods")
	fs.DurationVar(&c.timeout, "timeout", 60*time.Second, "timeout of the whole command")
}

// outputFormat is --format human|json and --json (the same as --format
// json), as `mntleak why pod` has them: human by default.
type outputFormat struct {
	format string
	json   bool
}

func (o *outputFormat) register(fs *flag.FlagSet, usage string) {
	fs.StringVar(&o.format, "format", "human", usage)
	fs.BoolVar(&o.json, "json", false, "the same as --format json")
}

// asJSON reports whether JSON was asked for.
func (o *outputFormat) asJSON() (bool, error) {
	if o.format != "human" && o.format != "json" {
		return false, fmt.Errorf("invalid --format %q: want human or json", o.format)
	}
	return o.json || o.format == "json", nil
}

// connect builds the client from the kubeconfig, as kubectl does, and the
// pod namespace to use.
func (c *common) connect(fake *backend) (cluster, runner, string, error) {
	if fake != nil { // tests
		ns := c.namespace
		if ns == "" {
			ns = "default"
		}
		return cluster{client: fake.client, daemonNS: c.daemonNS, selector: c.selector}, fake.runner, ns, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return cluster{}, nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-mntleak"
	ns := c.namespace
	if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil {
			return cluster{}, nil, "", fmt.Errorf("kubeconfig's namespace: %w", err)
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return cluster{}, nil, "", fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return cluster{client: client, daemonNS: c.daemonNS, selector: c.selector}, execRunner{config: cfg, client: client}, ns, nil
}

// run is the plugin; fake, in tests, replaces the API server and exec.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, fake *backend) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "why":
		return runWhy(ctx, args[1:], stdout, stderr, fake)
	case "audit":
		return runAudit(ctx, args[1:], stdout, stderr, fake)
	case "release":
		return runRelease(ctx, args[1:], stdout, stderr, fake)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "kubectl mntleak: unknown command %q (see 'kubectl mntleak help')\n", args[0])
	return exitUsage
}

// parse parses flags anywhere among the arguments (kubectl's way: `why
// pod/x -n ns`) and returns the positional ones. -h prints the usage.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, int, bool) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stderr)
				fmt.Fprintf(stderr, "usage of kubectl mntleak %s:\n", fs.Name())
				fs.PrintDefaults()
				return nil, exitOK, true
			}
			fmt.Fprintf(stderr, "kubectl mntleak %s: %v\n", fs.Name(), err)
			return nil, exitUsage, true
		}
		if fs.NArg() == 0 {
			return pos, 0, false
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// fail prints one error line and returns code.
func fail(stderr io.Writer, cmd string, code int, err error) int {
	fmt.Fprintf(stderr, "kubectl mntleak %s: %v\n", cmd, err)
	return code
}
