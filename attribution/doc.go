// Package attribution names the containers and pods a finding's processes
// run in: container id → the runtime's name for it, its image and, for a
// Kubernetes pod's container, the pod's name, namespace and UID and the
// container's name in the pod spec (the io.kubernetes.* labels); pod UID →
// name and namespace. The answers come from Sources (the CRI in package
// attribution/cri, the Docker Engine API in attribution/docker, the API
// server in attribution/kubeapi); this package holds what they share and
// imports none of them, so the correlator and the stream reader stay free
// of gRPC and the API server's client.
//
// Every call takes a context and runs under a timeout; answers are cached
// by id and a miss asks the sources again, except that a miss (or a
// source's error) is remembered for a while, so a storm of findings about
// unknown ids does not hammer the runtime. The caller (package enrich)
// runs off the event path.
//
// Files:
//   - types.go: Container, Pod, Source, Lookup, the errors.
//   - resolver.go: Resolver, the cache in front of the sources.
//   - cache.go: the bounded cache with its negative entries.
//   - record.go: Record (an answer as a recorded stream holds it),
//     Recorder and Replay, so `mntleak replay` gets the live answers.
//   - labels.go: reading the io.kubernetes.* labels.
//   - unixsocket.go: DialUnix, the runtimes' sockets' dialer.
package attribution
