#!/bin/sh
# make mutation: gremlins (go.mod's tool) over correlate/ and release/
# against the tests that need no root, run as an unprivileged user so the
# privileged tests skip themselves (docs/mutation.md says how to read it).
#
#   MUTATION_PKGS   packages, as directories (default: correlate release)
#   MUTATION_FILES  only these files of them, by base name (default: all),
#                   e.g. MUTATION_FILES="leak.go settle.go"
#   MUTATION_OUT    where the results go (default: bin/mutation): one
#                   gremlins JSON per package and summary.md, the table
#   MUTATION_TIMEOUT_COEFFICIENT  a mutant's test run is timed out after
#                   this many times the coverage run (default 5: the runs
#                   share the machine, and a loop mutated to never end
#                   still stops)
#   MUTATION_USER   uid:gid to run as (default 65534:65534, nobody)
#   MUTATION_WORKERS  mutants tested at once (default 1; on an idle
#                   machine, its core count halves the time)
#
# Every job runs under nice -n 19, by default with one worker. The test cache is
# cleared first: gremlins times each mutant's run from its coverage run,
# and a cached one (0.4 s) would time every mutant out.
# TestReplayIsStable (50 replays of every recorded stream, compared with
# each other: 95% of the package's test time) is skipped, and go vet is
# off (a mutant's build would vet it again): every stream is still
# replayed against its golden by TestGolden.
set -eu

GO=${GO:-go}
PKGS=${MUTATION_PKGS:-correlate release}
FILES=${MUTATION_FILES:-}
OUT=${MUTATION_OUT:-bin/mutation}
COEFF=${MUTATION_TIMEOUT_COEFFICIENT:-5}
RUNAS=${MUTATION_USER:-65534:65534}
WORKERS=${MUTATION_WORKERS:-1}
STATE=/var/tmp/mntleak-mutation
SKIP='^TestReplayIsStable$'

root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The unprivileged user's own HOME, temp dir, build and module caches
# (copies of the caller's, so nothing is downloaded or rebuilt from scratch).
uid=${RUNAS%%:*}
gid=${RUNAS#*:}
mkdir -p "$STATE/home" "$STATE/tmp" "$STATE/out" "$STATE/gocache" "$STATE/gomod"
$GO build -o "$STATE/gremlins" github.com/go-gremlins/gremlins/cmd/gremlins
cp -a -u "$($GO env GOMODCACHE)/." "$STATE/gomod/"
[ -f "$STATE/gocache/README" ] || cp -a "$($GO env GOCACHE)/." "$STATE/gocache/"
chown -R "$uid:$gid" "$STATE"

unprivileged() {
	setpriv --reuid="$uid" --regid="$gid" --clear-groups \
		env -u MNTLEAK_REQUIRE_BPF HOME="$STATE/home" TMPDIR="$STATE/tmp" \
		GOCACHE="$STATE/gocache" GOMODCACHE="$STATE/gomod" GOTOOLCHAIN=local \
		GOFLAGS="-buildvcs=false -vet=off -skip=$SKIP" PATH="$(dirname "$(command -v "$GO")"):/usr/bin:/bin" \
		nice -n 19 "$@"
}

# gremlins runs in a copy of the tree made for this run: edits made
# meanwhile do not reach it, and its coverage run compiles the packages
# again (at another path nothing is cached), as every mutant's run does.
# In a tree run before, the coverage build came from the cache, took 2 s,
# and every mutant timed out after 5 times that.
src=$STATE/tmp/src-$$
rm -rf "$src" && mkdir -p "$src"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - | tar -xf - -C "$src"
else
	tar --exclude=./.git --exclude=./bin -cf - . | tar -xf - -C "$src"
fi
chown -R "$uid:$gid" "$src"
trap 'rm -rf "$src"' EXIT

unprivileged "$GO" clean -testcache
cd "$src"
for pkg in $PKGS; do
	# gremlins takes files to leave out, as regexps on the path under pkg.
	set --
	if [ -n "$FILES" ]; then
		for f in "$pkg"/*.go; do
			base=${f##*/}
			case $base in *_test.go) continue ;; esac
			case " $FILES " in *" $base "*) continue ;; esac
			set -- "$@" -E "^$(printf %s "$base" | sed 's/\./\\./g')\$"
		done
	fi
	name=$(printf %s "$pkg" | tr / _)
	json=$STATE/out/$$-$name.json # this run's: runs may overlap
	echo "== gremlins over $pkg${FILES:+ (only $FILES)}"
	unprivileged "$STATE/gremlins" unleash --workers "$WORKERS" \
		--timeout-coefficient "$COEFF" -o "$json" "$@" "./$pkg"
	mv "$json" "$OUT/$name.json"
done
cd "$root"

set --
for pkg in $PKGS; do set -- "$@" "$OUT/$(printf %s "$pkg" | tr / _).json"; done
$GO run ./e2e/testkit/mutation "$@" > "$OUT/summary.md"
cat "$OUT/summary.md"
