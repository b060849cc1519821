// Package audit is `mntleak audit`'s checks: the leaks that exist on the
// node now (Leaks) and the configuration that makes leaks (Risks), read
// from a correlator's snapshot of every mount namespace through its
// accessors (Lineage, Ledger, HostNS, BindSource); it changes nothing in
// it. The node's files it needs (runtime and unit settings) come as
// RiskFacts, read by the caller through nodeview and nodeconf.
//
// Files: leaks.go (Item, its line, Leaks), risks.go (RiskFacts, Risks,
// LiveRestore).
package audit
