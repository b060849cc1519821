// Package docker reproduces the five incidents mntleak was designed from
// (../shared/seeds, written up in docs/incidents.md) with a real Docker
// Engine, and checks what the real mntleak daemon logs about each. It holds
// tests only: the scripts in scripts/ make each incident happen.
package docker
