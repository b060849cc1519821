# Sourced by the guest scenarios. expect KEY VALUE records what the host
# test asserts (lab/out/NAME.expect); the helpers are the scenarios'
# common.sh (e2e/scenarios/common.sh, copied into the payload by lab.sh).
set -euo pipefail
SCENARIO=$(basename "$0" .sh)
W=/var/tmp/lab-$SCENARIO
mkdir -p "$W"
export MNTLEAK_EXPECT=/lab/out/$SCENARIO.expect
IMG=lab/busybox
source /lab/common.sh
mainpid() { systemctl show -p MainPID --value "$1"; }
