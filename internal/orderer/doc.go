// Package orderer is the reference build's Fabric 1.2 ordering service. Its
// sub-packages mirror Fabric's orderer so that each stage can later be swapped
// by a paper's optimization:
//
//	broadcast    AtomicBroadcast.Broadcast: one message at a time per stream
//	channel      per-channel resources: config bundle, message filters, block writer
//	blockcutter  Fabric's batching rules (MaxMessageCount, PreferredMaxBytes)
//	consensus    the consenter interface; consensus/solo is Fabric's solo
//	ledger       the orderer's block store, in RAM or in an append-only file
//	deliver      AtomicBroadcast.Deliver with Fabric's SeekInfo semantics
//	metrics      Prometheus metrics of one orderer instance
//	server       configuration and wiring used by cmd/orderer and tests
package orderer
