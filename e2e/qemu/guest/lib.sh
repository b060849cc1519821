# Sourced by the guest scenarios. expect KEY VALUE records what the host
# test asserts (LAB_PASS_OUT/NAME.expect: the directory of this pass's
# results, which run.sh sets, /lab/out or /lab/out/tracepoint, so the
# second pass of make lab never writes into the first's files); the
# helpers are the scenarios'
# common.sh and the seeds' stories its seeds/ (e2e/scenarios/common.sh
# and e2e/scenarios/seeds/, copied into the payload by lab.sh).
set -euo pipefail
SCENARIO=$(basename "$0" .sh)
W=/var/tmp/lab-$SCENARIO
mkdir -p "$W"
export MNTLEAK_EXPECT=${LAB_PASS_OUT:?run.sh sets the pass directory}/$SCENARIO.expect
IMG=lab/busybox
SETTLE=1
source /lab/common.sh
mainpid() { systemctl show -p MainPID --value "$1"; }
