#!/usr/bin/env bash
# Builds the reference toolkit's source-controller and kustomize-controller
# from the Go module in hack/reference, once, into a cache outside the
# checkout, and prints the folder that holds them. Only the benchmark's
# reference mode runs them (go run ./test/bench -controllers reference); no
# test and no CI run builds them. Windlass's own module never imports them.
#
#   hack/reference.sh          build what is missing, print the folder
#   hack/reference.sh --print  print the folder only
#   hack/reference.sh --list   print the path of each binary, built or not
#
# The controllers' modules are required by hack/reference/go.mod (with the
# replace directives of their own go.mod files) and built from it; no Go
# file imports them.
#
# Each binary is kept in that folder under its name and version
# (source-controller-v1.9.6), so that bumping one builds it alone.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

print_only=false
list=false
case "${1:-}" in
	"") ;;
	--print) print_only=true ;;
	--list) print_only=true; list=true ;;
	*) echo "usage: hack/reference.sh [--print|--list]" >&2; exit 2 ;;
esac

folder=hack/reference
# The program name, its package and its module, in build order.
controllers=(
	"source-controller github.com/fluxcd/source-controller github.com/fluxcd/source-controller"
	"kustomize-controller github.com/fluxcd/kustomize-controller github.com/fluxcd/kustomize-controller"
)

# version MODULE prints the version hack/reference/go.mod requires.
version() {
	awk -v m="$1" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$folder/go.mod"
}

dir="${WINDLASS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/windlass}/reference"

if ! $print_only; then
	command -v go >/dev/null || { echo "reference: building the reference controllers needs Go (https://go.dev/dl/) on the PATH" >&2; exit 1; }
	# Their releases from v1.10 on need Go 1.27, which the go command takes
	# from the module proxy; this module alone, never Windlass's.
	if [[ "$(awk '$1 == "go" { print $2; exit }' "$folder/go.mod")" == 1.27* ]]; then
		export GOTOOLCHAIN=go1.27.3
	fi
	missing=()
	for c in "${controllers[@]}"; do
		read -r name pkg module <<<"$c"
		v="$(version "$module")"
		[[ -n "$v" ]] || { echo "reference: $module is not in $folder/go.mod" >&2; exit 1; }
		[[ -x "$dir/$name-$v" ]] || missing+=("$name-$v $pkg")
	done
	if ((${#missing[@]} > 0)); then
		mkdir -p "$dir"
		echo "reference: building ${#missing[@]} controller(s) into $dir; the first build takes about 10 minutes" >&2
		i=0
		for m in "${missing[@]}"; do
			read -r name pkg <<<"$m"
			i=$((i + 1))
			echo "reference: building $name ($i/${#missing[@]}) from $pkg ($folder)" >&2
			start=$SECONDS
			# Through a temporary file, so that a build cut short leaves no broken binary.
			if ! CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly \
				go build -C "$folder" -trimpath -ldflags='-s -w' -o "$dir/$name.tmp" "$pkg"; then
				rm -f "$dir/$name.tmp"
				echo "reference: building $name failed" >&2
				exit 1
			fi
			mv "$dir/$name.tmp" "$dir/$name"
			echo "reference: built $name in $((SECONDS - start))s" >&2
		done
	fi
fi
if $list; then
	for c in "${controllers[@]}"; do
		read -r name _ module <<<"$c"
		echo "$dir/$name-$(version "$module")"
	done
else
	echo "$dir"
fi
