// The revised-API transfer chaincode against Fabric v0.6.1's shim with our
// DiffUpdate and Compound patches. It is built in GOPATH mode inside the
// fujitsu-api upstream build (GO111MODULE=off ignores this file); the file
// only keeps the directory out of the repository's own module, which does
// not depend on Fabric.
module fabricrepro/chaincode/transfer-revised

go 1.26.0
