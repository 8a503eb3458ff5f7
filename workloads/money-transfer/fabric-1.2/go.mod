// The money-transfer chaincode against Fabric 1.2's shim. It is built in
// GOPATH mode inside an upstream Fabric build (harness/upstream.py copies this
// directory to $GOPATH/src/fabricrepro/chaincode/money-transfer, where
// GO111MODULE=off ignores this file). The file only keeps the directory out
// of the repository's own module, which does not depend on Fabric.
module fabricrepro/chaincode/money-transfer

go 1.26.0
