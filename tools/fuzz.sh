#!/usr/bin/env bash
# Run every fuzz target of the given packages for FUZZTIME each.
# A run that ends with the fuzzing engine's own "context deadline exceeded"
# and no new crasher under testdata/fuzz is the engine timing out while it
# stops its workers on a busy machine, not a finding: it is run once more.
# Any other failure, or a crasher, fails at once.
set -euo pipefail
go="${GO:-go}"
fuzztime="${FUZZTIME:-5s}"
crashers() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }
for pkg in "$@"; do
	for t in $("$go" test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
		for attempt in 1 2; do
			echo "fuzz $pkg $t ($fuzztime, attempt $attempt)"
			before=$(crashers "$pkg/testdata/fuzz/$t")
			out=$(mktemp)
			if "$go" test -run '^$' -fuzz "^$t\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$out"; then
				rm -f "$out"
				break
			fi
			after=$(crashers "$pkg/testdata/fuzz/$t")
			if [ "$attempt" = 1 ] && [ "$after" = "$before" ] && grep -q 'context deadline exceeded' "$out"; then
				rm -f "$out"
				continue
			fi
			rm -f "$out"
			exit 1
		done
	done
done
