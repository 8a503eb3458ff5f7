package channelconfig

import (
	"path/filepath"
	"testing"

	"fabricrepro/internal/msp"
	"fabricrepro/internal/policy"
	"fabricrepro/internal/protoutil"
)

// TestGenesisRoundTripAndPolicies generates real crypto material, builds a
// genesis block, reads it back and checks who may write and who may sign
// blocks.
func TestGenesisRoundTripAndPolicies(t *testing.T) {
	dir := t.TempDir()
	if _, err := msp.Generate(dir, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 2, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	orgs, err := OrgsFromCryptoDir(dir)
	if err != nil || len(orgs) != 3 {
		t.Fatalf("orgs %v err %v", orgs, err)
	}
	batch := DefaultBatch
	batch.MaxMessageCount = 100
	block, err := GenesisBlock("ch1", orgs, batch)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FromGenesisBlock(block)
	if err != nil {
		t.Fatal(err)
	}
	if b.ChannelID != "ch1" || b.Batch.MaxMessageCount != 100 || b.Batch.Timeout != batch.Timeout {
		t.Fatalf("bundle %+v", b)
	}
	if len(b.OrdererMSPs) != 1 || len(b.ApplicationMSPs) != 2 {
		t.Fatalf("msps %v %v", b.OrdererMSPs, b.ApplicationMSPs)
	}
	client, err := msp.LoadSigningIdentity(filepath.Join(dir, "peerOrganizations/org1.example.com/users/client0@org1.example.com/msp"), "Org1MSP")
	if err != nil {
		t.Fatal(err)
	}
	orderer, err := msp.LoadSigningIdentity(filepath.Join(dir, "ordererOrganizations/orderer.example.com/orderers/orderer0.orderer.example.com/msp"), "OrdererMSP")
	if err != nil {
		t.Fatal(err)
	}
	sign := func(s *msp.SigningIdentity, data []byte) policy.SignedData {
		sig, _ := s.Sign(data)
		return policy.SignedData{Identity: s.Serialize(), Data: data, Signature: sig}
	}
	data := []byte("envelope")
	if err := b.Writers.Evaluate([]policy.SignedData{sign(client, data)}); err != nil {
		t.Fatalf("client should be a writer: %v", err)
	}
	if err := b.BlockValidation.Evaluate([]policy.SignedData{sign(client, data)}); err == nil {
		t.Fatal("a client must not satisfy BlockValidation")
	}
	if err := b.BlockValidation.Evaluate([]policy.SignedData{sign(orderer, data)}); err != nil {
		t.Fatalf("orderer should satisfy BlockValidation: %v", err)
	}
	forged := sign(client, data)
	forged.Data = []byte("other")
	if err := b.Writers.Evaluate([]policy.SignedData{forged}); err == nil {
		t.Fatal("a signature over other bytes must not satisfy Writers")
	}
	// A signed block verifies against BlockValidation.
	blk := protoutil.NewBlock(1, protoutil.BlockHeaderHash(block.Header))
	if err := protoutil.SignBlock(blk, orderer, nil); err != nil {
		t.Fatal(err)
	}
	triples, err := protoutil.BlockSignatures(blk)
	if err != nil {
		t.Fatal(err)
	}
	var sd []policy.SignedData
	for _, x := range triples {
		sd = append(sd, policy.SignedData{Identity: x[0], Data: x[1], Signature: x[2]})
	}
	if err := b.BlockValidation.Evaluate(sd); err != nil {
		t.Fatalf("orderer-signed block rejected: %v", err)
	}
}

// TestChannelIDOfFabricChannelBlock reads block 0 of "mychannel" as a real
// Fabric v1.2.0 orderer made it (testdata/fabric-1.2-mychannel.block, from
// `peer channel create` against a solo orderer, cryptogen's one-org network):
// its policies are ImplicitMeta, which FromGenesisBlock does not compile, but
// clients only need the channel ID.
func TestChannelIDOfFabricChannelBlock(t *testing.T) {
	path := filepath.Join("testdata", "fabric-1.2-mychannel.block")
	block, err := ReadBlock(path)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := ChannelID(block); err != nil || id != "mychannel" {
		t.Fatalf("channel %q, err %v", id, err)
	}
	if id, err := ReadChannelID(path); err != nil || id != "mychannel" {
		t.Fatalf("channel %q, err %v", id, err)
	}
	if _, err := FromGenesisBlock(block); err == nil {
		t.Fatal("FromGenesisBlock compiled ImplicitMeta policies: update this test and the clients")
	}
	if _, err := ChannelID(protoutil.NewBlock(1, nil)); err == nil {
		t.Fatal("a block without envelopes has no channel")
	}
}
