#!/usr/bin/env bash
# Generates Go code for Fabric 1.2's wire format from the .proto files that the
# npm package fabric-client@1.2.2 ships under lib/protos/. Generated code is not
# committed: `invoke build` (and `go generate ./internal/protos`) runs this.
#
# Why the rewriting: the shipped files use Node-style relative imports
# ("../common/common.proto") and go_package options that point at the
# unreachable github.com/hyperledger/fabric module. We copy them into a scratch
# tree, make every import root-relative, and map each file to a package of
# this module with protoc's M options.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODULE="fabricrepro/internal/protos"
VERSION="1.2.2"
CACHE="${FABRIC_PROTOS_CACHE:-$HOME/.cache/fabricrepro}"
# The proto directories this project uses; gossip and discovery are not needed.
DIRS="common msp orderer peer ledger/rwset ledger/rwset/kvrwset ledger/queryresult"

for tool in protoc protoc-gen-go protoc-gen-go-grpc npm; do
  command -v "$tool" >/dev/null || { echo "generate.sh: $tool not found; run 'invoke setup'" >&2; exit 1; }
done

mkdir -p "$CACHE"
TARBALL="$CACHE/fabric-client-$VERSION.tgz"
if [ ! -s "$TARBALL" ]; then
  (cd "$CACHE" && npm pack --silent "fabric-client@$VERSION" >/dev/null)
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
tar -xzf "$TARBALL" -C "$WORK" package/lib/protos
SRC="$WORK/package/lib/protos"
OUT="$WORK/src"
mkdir -p "$OUT"

M_OPTS=()
for d in $DIRS; do
  mkdir -p "$OUT/$d"
  for f in "$SRC/$d"/*.proto; do
    name="$(basename "$f")"
    # Root-relative imports: "../x/y.proto" -> "x/y.proto"; a bare "y.proto" is
    # a sibling in the same directory; "common/..." is already root-relative.
    # google/protobuf/* comes from protoc's own well-known types.
    awk -v dir="$d" '
      /^import / {
        match($0, /"[^"]+"/); p = substr($0, RSTART+1, RLENGTH-2)
        gsub(/^(\.\.\/)+/, "", p); sub(/^\.\//, "", p)
        if (p !~ /\// ) p = dir "/" p
        print "import \"" p "\";"; next
      }
      /^option go_package/ { next }
      { print }' "$f" > "$OUT/$d/$name"
    M_OPTS+=("$d/$name=$MODULE/$d")
  done
done

mkdir -p "$WORK/gen"
for d in $DIRS; do
  go_opts=(); grpc_opts=()
  for m in "${M_OPTS[@]}"; do go_opts+=("--go_opt=M$m"); grpc_opts+=("--go-grpc_opt=M$m"); done
  rm -f "$HERE/$d"/*.pb.go
  protoc -I "$OUT" --go_out="$WORK/gen" --go-grpc_out="$WORK/gen" \
    "${go_opts[@]}" "${grpc_opts[@]}" "$OUT/$d"/*.proto
done
# protoc writes to gen/<import path>; move the result next to this script.
for d in $DIRS; do
  mkdir -p "$HERE/$d"
  cp "$WORK/gen/$MODULE/$d"/*.go "$HERE/$d/"
done
echo "generated Fabric $VERSION protos into $HERE"
