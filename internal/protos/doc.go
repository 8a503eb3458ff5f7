// Package protos holds Go code generated from Fabric 1.2's published .proto
// files (npm fabric-client@1.2.2, lib/protos). The generated sub-packages are
// not committed; run `go generate ./internal/protos` or `invoke build`.
package protos

//go:generate bash generate.sh
