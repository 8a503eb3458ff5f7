// The smallbank chaincode against Fabric 1.1's shim. It is built in GOPATH
// mode inside the upstream validation-opt build (harness/upstream.py copies
// this directory to $GOPATH/src/fabricrepro/chaincode/smallbank, where
// GO111MODULE=off ignores this file). The file only keeps the directory out
// of the repository's own module, which does not depend on Fabric.
module fabricrepro/chaincode/smallbank

go 1.26.0
