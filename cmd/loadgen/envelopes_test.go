package main

import (
	"context"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/config"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// The envelopes workload's envelopes: ENDORSER_TRANSACTION type (SmartBFT batches no other), the requested data size, unique Fabric transaction
// IDs from nonce and creator, and a signature of the creator over the payload (what an orderer checks).
func TestEnvelopesAreSignedTransactionsOfTheSize(t *testing.T) {
	dir := t.TempDir()
	if _, err := msp.Generate(dir, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	org := filepath.Join(dir, "peerOrganizations", "org1.example.com")
	client, err := msp.LoadSigningIdentity(filepath.Join(org, "users", "client0@org1.example.com", "msp"), "Org1MSP")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{4, 40, 4096} {
		envs, err := makeEnvelopes(context.Background(), "ch", client, 30, size)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, e := range envs {
			payload, chdr, shdr, err := protoutil.UnmarshalPayload(e.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			if chdr.Type != int32(cb.HeaderType_ENDORSER_TRANSACTION) || chdr.ChannelId != "ch" || len(payload.Data) != size {
				t.Fatalf("envelope %d: type %d channel %q data %d bytes", i, chdr.Type, chdr.ChannelId, len(payload.Data))
			}
			if chdr.TxId != e.TxID || chdr.TxId != protoutil.ComputeTxID(shdr.Nonce, shdr.Creator) || seen[e.TxID] {
				t.Fatalf("envelope %d: transaction ID %q not Fabric's, or repeated", i, chdr.TxId)
			}
			seen[e.TxID] = true
			if size >= 8 && payload.Data[7] != byte(i) {
				t.Fatalf("envelope %d: data does not start with its index", i)
			}
			if err := client.Identity.Verify(e.Envelope.Payload, e.Envelope.Signature); err != nil {
				t.Fatalf("envelope %d: signature: %v", i, err)
			}
			// negative control: a changed payload does not verify
			bad := proto.Clone(e.Envelope).(*cb.Envelope)
			bad.Payload[len(bad.Payload)-1] ^= 1
			if client.Identity.Verify(bad.Payload, bad.Signature) == nil {
				t.Fatalf("envelope %d: a changed payload verified", i)
			}
		}
	}
}

// The envelopes workload needs no endorser or chaincode; it refuses mutations, conflicts, a setup
// phase and an empty envelope.
func TestEnvelopesConfigChecked(t *testing.T) {
	base := "mspDir: d\nmspID: Org1MSP\ngenesisBlock: g\norderers: [o]\nworkload: envelopes\ntransfer:\n  transactions: 10\n  payloadBytes: 40\n"
	cfg := defaults()
	if err := config.Parse("lg.yaml", []byte(base), &cfg); err != nil || cfg.check() != nil {
		t.Fatalf("minimal envelopes config: %v %v", err, cfg.check())
	}
	for name, edit := range map[string]func(c *Config){
		"setup phase": func(c *Config) { c.Phase = "setup" },
		"no data":     func(c *Config) { c.Transfer.PayloadBytes = 0 },
		"no envelope": func(c *Config) { c.Transfer.Transactions = 0 },
		"a mutation":  func(c *Config) { c.Transfer.CorruptCreator, _ = ParseShare("2") },
		"conflicts":   func(c *Config) { c.Transfer.ConflictRate = 0.1 },
		"no orderer":  func(c *Config) { c.Orderers = nil },
	} {
		c := defaults()
		if err := config.Parse("lg.yaml", []byte(base), &c); err != nil {
			t.Fatal(err)
		}
		edit(&c)
		if c.check() == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
