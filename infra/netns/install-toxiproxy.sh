#!/bin/sh
# Install the toxiproxy server used for per-link delay by the netns provider
# (this kernel has no sch_netem). Pinned; ~20-90 s of Go build.
# Result: $(go env GOPATH)/bin/toxiproxy-server (the provider also accepts .../bin/server).
set -eu
VERSION="${TOXIPROXY_VERSION:-v2.12.0}"
go install "github.com/Shopify/toxiproxy/v2/cmd/server@${VERSION}"
BIN="$(go env GOPATH)/bin"
ln -sf "$BIN/server" "$BIN/toxiproxy-server"
"$BIN/toxiproxy-server" -version
