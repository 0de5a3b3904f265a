#!/usr/bin/env bash
# Runs every fuzz target of the repository (both modules) for a short
# fixed time each, one target per `go test -fuzz` invocation, and fails if
# any finds a crasher (which go test writes to the package's
# testdata/fuzz/<FuzzName>/ for replay).
#
#   FUZZTIME=5s   fuzzing time per target (go test -fuzztime syntax)
#   FUZZ_MATCH=re only the targets whose "dir FuzzName" matches re
#   FUZZ_KEEP=n   afterwards, copy up to n inputs per target from the
#                 fuzzing cache into testdata/fuzz/<FuzzName>/ (refreshes
#                 the seed corpus kept in the repository)
#
# RELIABILITY.md says how to run them for hours.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fuzztime=${FUZZTIME:-5s}
match=${FUZZ_MATCH:-.}
keep=${FUZZ_KEEP:-0}
cache=$(go env GOCACHE)/fuzz

# "dir name" for every fuzz target, sorted.
targets=$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '/node_modules/' | while read -r f; do
	dir=$(dirname "$f")
	sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$f" | while read -r name; do
		echo "${dir#./} $name"
	done
done | sort | grep -E -- "$match" || true)
if [ -z "$targets" ]; then
	echo "fuzz: no target matches $match" >&2
	exit 1
fi

failed=()
n=0
start=$SECONDS
while read -r dir name; do
	n=$((n + 1))
	# The module holding dir: the nearest go.mod above it.
	mod=$dir
	while [ ! -f "$root/$mod/go.mod" ] && [ "$mod" != . ]; do mod=$(dirname "$mod"); done
	pkg=./${dir#"$mod"}
	pkg=${pkg/#.\/\//./}
	t0=$SECONDS
	for attempt in 1 2 3; do
		if out=$(cd "$root/$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
			echo "ok   $dir $name ($((SECONDS - t0))s)"
			break
		fi
		# Go 1.26's fuzzing engine can end a run at its -fuzztime deadline
		# with a bare "context deadline exceeded" and no failing input,
		# a race in its coordinator, not in the target (Go issue 75804,
		# fixed in Go 1.27); such a run is made again, twice at most.
		if [ "$attempt" -lt 3 ] && echo "$out" | grep -qx '[[:space:]]*context deadline exceeded' &&
			! echo "$out" | grep -q 'Failing input written'; then
			echo "again $dir $name (the fuzzing engine stopped at its deadline without a failing input)"
			continue
		fi
		echo "FAIL $dir $name"
		echo "$out" | grep -v '^fuzz: elapsed' | sed 's/^/    /'
		failed+=("$dir $name")
		break
	done
	if [ "$keep" -gt 0 ]; then
		importpath=$(cd "$root/$mod" && go list "$pkg")
		from=$cache/$importpath/$name
		if [ -d "$from" ]; then
			mkdir -p "$root/$dir/testdata/fuzz/$name"
			# Inputs of up to 2 KiB, spread evenly over their sizes.
			files=$(cd "$from" && find . -type f -size -2049c -printf '%s %f\n' | sort -n | cut -d' ' -f2)
			total=$(echo "$files" | grep -c . || true)
			if [ "$total" -gt 0 ]; then
				echo "$files" | awk -v n="$keep" -v t="$total" 'NR == 1 || int((NR - 1) * n / t) != int((NR - 2) * n / t)' |
					while read -r f; do cp "$from/$f" "$root/$dir/testdata/fuzz/$name/"; done
			fi
		fi
	fi
done <<<"$targets"

echo "fuzz: $n targets, ${fuzztime} each, $((SECONDS - start))s in all"
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'fuzz: crashers in %s (inputs kept under its testdata/fuzz/)\n' "${failed[@]}" >&2
	exit 1
fi
