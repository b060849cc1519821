// Package deploy holds mntleak's deployment files (a systemd unit and a
// Kubernetes DaemonSet) and the tests that check the properties they must
// keep: mntleak must never hold a mount itself.
package deploy
