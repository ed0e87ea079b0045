#!/usr/bin/env bash
# Builds the test servers (the distribution registry, the versitygw S3 gateway,
# the cosign CLI, the helm CLI, an OpenID provider, and Prometheus with
# promtool) from the Go modules in hack/testservers (Prometheus from its own,
# hack/testservers/prometheus), once, into a cache outside the checkout, and
# prints the folder that holds them. The tests find them there through
# internal/testutil/testservers (WINDLASS_TESTSERVERS overrides the folder).
#
#   hack/testservers.sh          build what is missing, print the folder
#   hack/testservers.sh --print  print the folder only
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

print_only=false
case "${1:-}" in
	"") ;;
	--print) print_only=true ;;
	*) echo "usage: hack/testservers.sh [--print]" >&2; exit 2 ;;
esac

# The program name, its package, its module and, when not hack/testservers, the
# folder of the module that pins it, in build order.
servers=(
	"registry github.com/distribution/distribution/v3/cmd/registry github.com/distribution/distribution/v3"
	"versitygw github.com/versity/versitygw/cmd/versitygw github.com/versity/versitygw"
	"cosign github.com/sigstore/cosign/v3/cmd/cosign github.com/sigstore/cosign/v3"
)
# Programs, with the same fields, kept in that folder under their name and
# version (helm-v4.2.4), so that adding or bumping one builds it alone.
versioned=(
	"helm helm.sh/helm/v4/cmd/helm helm.sh/helm/v4"
	"oidc-provider github.com/zitadel/oidc/v3/example/server github.com/zitadel/oidc/v3"
	"prometheus github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus hack/testservers/prometheus"
	"promtool github.com/prometheus/prometheus/cmd/promtool github.com/prometheus/prometheus hack/testservers/prometheus"
)

# version MODULE FOLDER prints the version FOLDER/go.mod requires.
version() {
	awk -v m="$1" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$2/go.mod"
}

dir="${WINDLASS_TESTSERVERS:-}"
if [[ -z "$dir" ]]; then
	cache="${WINDLASS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/windlass}"
	key=""
	for s in "${servers[@]}"; do
		read -r name _ module folder <<<"$s"
		folder="${folder:-hack/testservers}"
		v="$(version "$module" "$folder")"
		[[ -n "$v" ]] || { echo "testservers: $module is not in $folder/go.mod" >&2; exit 1; }
		key+="$name-$v-"
	done
	dir="$cache/testservers/${key}$(go env GOOS)-$(go env GOARCH)"
fi

if ! $print_only; then
	command -v go >/dev/null || { echo "testservers: building the test servers needs Go (https://go.dev/dl/) on the PATH" >&2; exit 1; }
	# Each entry of missing is "FILE PACKAGE FOLDER".
	missing=()
	for s in "${servers[@]}"; do
		read -r name pkg _ folder <<<"$s"
		[[ -x "$dir/$name" ]] || missing+=("$name $pkg ${folder:-hack/testservers}")
	done
	for s in "${versioned[@]}"; do
		read -r name pkg module folder <<<"$s"
		folder="${folder:-hack/testservers}"
		v="$(version "$module" "$folder")"
		[[ -n "$v" ]] || { echo "testservers: $module is not in $folder/go.mod" >&2; exit 1; }
		[[ -x "$dir/$name-$v" ]] || missing+=("$name-$v $pkg $folder")
	done
	if ((${#missing[@]} > 0)); then
		mkdir -p "$dir"
		echo "testservers: building ${#missing[@]} test server(s) into $dir; the first build takes about 15 minutes" >&2
		i=0
		for s in "${missing[@]}"; do
			read -r name pkg folder <<<"$s"
			i=$((i + 1))
			echo "testservers: building $name ($i/${#missing[@]}) from $pkg ($folder)" >&2
			start=$SECONDS
			# Through a temporary file of this process's own, so that a build
			# cut short leaves no broken binary, and two runs that build at
			# once (two checkouts sharing the cache) do not take each other's.
			tmp="$dir/$name.tmp.$$"
			if ! CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly \
				go build -C "$folder" -trimpath -ldflags='-s -w' -o "$tmp" "$pkg"; then
				rm -f "$tmp"
				echo "testservers: building $name failed" >&2
				exit 1
			fi
			mv "$tmp" "$dir/$name"
			echo "testservers: built $name in $((SECONDS - start))s" >&2
		done
	fi
fi
echo "$dir"
