// Package finding is mntleak's finding model: what a verdict says and how
// it is written for people. The engine (package correlate) makes
// findings; the sinks (output, enrich, kubeevents, the journal), release
// and the CLI read and render them; none of them needs the engine for it.
// Nothing here refers to the correlator: a Finding is plain data, and its
// rendering is a pure function of it.
//
// Files:
//   - cause.go: Cause, its slugs, IsLeak, ParseCause, Causes; each
//     cause's row (CauseInfo: the evidence it needs, its fix, the recorded
//     scenario docs/causes.md quotes a real finding of it from).
//   - covered.go: CoveredSituations, the situations an issue asked about
//     that an existing cause explains, with the file holding a real
//     finding line of each and the threads they were read from.
//   - finding.go: Finding, its kinds (failure, leak, held), its parts
//     (Call, Object, Holder, Actor, ProcRef, PinRef, Evidence, EventRef,
//     LeakRef, Incomplete), its id, Check (what makes one unfit to show),
//     and the process a holder is named by (ChooseActor).
//   - line.go: its one-line form, the only place a finding is rendered
//     as a line, and the wording of processes, namespaces and times
//     (ProcName, ProcList, NSName, Clock).
//   - short.go: the short form a person reads: Headline (at most
//     HeadlineLimit characters: what is stuck, who holds it, the cause; the
//     journal's MESSAGE, the lead of an Event's note), Details (the lines
//     under it: the call, each holder, the cause with the leaking event,
//     the fix, the release command) and Block (both, as a terminal shows
//     a finding).
//   - report.go: the form `mntleak why` prints.
//   - release.go: ReleaseRefusal, why release leaves a holder's copy
//     alone (the one check of release's plan and of the command a finding
//     offers), and ReleaseCommand.
//   - workload.go: the pod and container names a finding carries once
//     enriched (package enrich, off the event path), the pod terms its
//     line starts with, NamePods (a pod named by UID, by its name), and
//     ShortID (a container id as docker prints it).
//   - escape.go: Escape, untrusted strings made safe for one line.
package finding
