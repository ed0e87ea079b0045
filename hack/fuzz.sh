#!/usr/bin/env bash
# Runs every Go fuzz target of the module (each func FuzzXxx(f *testing.F)
# in a test file), one after another, each for FUZZTIME (30s by default),
# and stops at the first failure with a message that names the target and
# its package; prints a summary at the end. `make fuzz` runs it; it is not
# part of CI, where the targets only run their seeds as ordinary tests.
#
#   hack/fuzz.sh                       every target of ./..., 30s each
#   FUZZTIME=5m hack/fuzz.sh           5 minutes each (or 10000x: inputs)
#   hack/fuzz.sh ./internal/oci/...    the targets of these packages only
#   FUZZFLAGS="-parallel 1 -fuzzminimizetime 5s" hack/fuzz.sh
#                                      more go test flags (by default a new
#                                      input is minimized for up to 60s, which
#                                      the fuzz time includes)
#   FUZZSKIP='^FuzzA$|^FuzzB$' hack/fuzz.sh   skip the targets whose name
#                                      matches this extended regular expression
#   hack/fuzz.sh --list [PACKAGES]     list the targets, run none
#
# go test writes an input that fails to the package's testdata/fuzz/FuzzXxx/;
# once the bug is fixed, keep it there as a seed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzztime="${FUZZTIME:-30s}"
skip="${FUZZSKIP:-}"
read -r -a extra <<<"${FUZZFLAGS:-}"
list=false
if [ "${1:-}" = --list ]; then
	list=true
	shift
fi
patterns=("$@")
if [ ${#patterns[@]} -eq 0 ]; then
	patterns=(./...)
fi

# Every "package target" pair, from the test files go list names (so only
# the packages of this module and its build), in a stable order.
targets=()
skipped=()
while read -r pkg dir files; do
	for f in $files; do
		while read -r name; do
			if [ -n "$skip" ] && grep -qE -- "$skip" <<<"$name"; then
				skipped+=("$pkg $name")
			else
				targets+=("$pkg $name")
			fi
		done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(\w* *\*testing\.F).*/\1/p' "$dir/$f")
	done
done < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}{{end}}' "${patterns[@]}")

if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz target in ${patterns[*]}" >&2
	exit 1
fi

if $list; then
	printf '%s\n' "${targets[@]}"
	exit 0
fi

echo "fuzz: ${#targets[@]} targets, ${fuzztime} each"
for t in ${skipped[@]+"${skipped[@]}"}; do
	echo "fuzz: skipping ${t#* } (${t% *}): it matches FUZZSKIP '${skip}'"
done
passed=()
for t in "${targets[@]}"; do
	pkg="${t% *}"
	name="${t#* }"
	echo "=== ${name} (${pkg})"
	start=$SECONDS
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" ${extra[@]+"${extra[@]}"} "$pkg"; then
		echo >&2
		echo "fuzz: FAILED: ${name} in ${pkg} (after ${#passed[@]} passed targets)" >&2
		echo "fuzz: the failing input, if any, is in the package's testdata/fuzz/${name}/; rerun it with" >&2
		echo "fuzz:   go test -run '^${name}\$' ${pkg}" >&2
		exit 1
	fi
	passed+=("$(printf '%-40s %-60s %4ss' "$name" "$pkg" "$((SECONDS - start))")")
done

echo
echo "fuzz: all ${#passed[@]} targets passed (${fuzztime} each):"
printf '  %s\n' "${passed[@]}"
if [ ${#skipped[@]} -gt 0 ]; then
	echo "fuzz: ${#skipped[@]} skipped (FUZZSKIP '${skip}'):"
	printf '  %s\n' "${skipped[@]}"
fi
