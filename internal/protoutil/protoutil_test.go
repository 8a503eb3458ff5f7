package protoutil

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
)

func identities(t *testing.T) (client, peer *msp.SigningIdentity) {
	dir := t.TempDir()
	if _, err := msp.Generate(dir, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: 1, Peers: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	org := filepath.Join(dir, "peerOrganizations/org1.example.com")
	client, err := msp.LoadSigningIdentity(filepath.Join(org, "users/client0@org1.example.com/msp"), "Org1MSP")
	if err != nil {
		t.Fatal(err)
	}
	peer, err = msp.LoadSigningIdentity(filepath.Join(org, "peers/peer0.org1.example.com/msp"), "Org1MSP")
	if err != nil {
		t.Fatal(err)
	}
	return client, peer
}

func TestTxIDIsHashOfNonceAndCreator(t *testing.T) {
	sum := sha256.Sum256([]byte("noncecreator"))
	if got := ComputeTxID([]byte("nonce"), []byte("creator")); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("txid %s", got)
	}
}

// TestEndorsedTransactionLayers builds a proposal, an endorsement and the
// final envelope, then takes every layer apart again and checks the
// signatures a committer will check.
func TestEndorsedTransactionLayers(t *testing.T) {
	client, peer := identities(t)
	prop, txID, err := CreateChaincodeProposal("ch", "money", [][]byte{[]byte("transfer"), []byte("a"), []byte("b")}, client.Serialize())
	if err != nil {
		t.Fatal(err)
	}
	hdr := &cb.Header{}
	if err := proto.Unmarshal(prop.Header, hdr); err != nil {
		t.Fatal(err)
	}
	resp, err := CreateProposalResponse(hdr, prop.Payload, &pb.ChaincodeID{Name: "money"}, []byte("rwset"), &pb.Response{Status: 200}, peer)
	if err != nil {
		t.Fatal(err)
	}
	env, err := CreateSignedTx(prop, client, resp)
	if err != nil {
		t.Fatal(err)
	}
	if client.Verify(env.Payload, env.Signature) != nil {
		t.Fatal("creator signature does not verify")
	}
	payload, chdr, shdr, err := UnmarshalPayload(env)
	if err != nil {
		t.Fatal(err)
	}
	if chdr.TxId != txID || chdr.Type != int32(cb.HeaderType_ENDORSER_TRANSACTION) || ComputeTxID(shdr.Nonce, shdr.Creator) != txID {
		t.Fatalf("header %v", chdr)
	}
	tx := &pb.Transaction{}
	if err := proto.Unmarshal(payload.Data, tx); err != nil || len(tx.Actions) != 1 {
		t.Fatalf("transaction: %v", err)
	}
	cap := &pb.ChaincodeActionPayload{}
	if err := proto.Unmarshal(tx.Actions[0].Payload, cap); err != nil {
		t.Fatal(err)
	}
	e := cap.Action.Endorsements[0]
	signed := append(append([]byte{}, cap.Action.ProposalResponsePayload...), e.Endorser...)
	if peer.Verify(signed, e.Signature) != nil {
		t.Fatal("endorsement signature does not verify")
	}
	prp := &pb.ProposalResponsePayload{}
	proto.Unmarshal(cap.Action.ProposalResponsePayload, prp)
	if string(prp.ProposalHash) != string(ProposalHash(hdr, prop.Payload)) {
		t.Fatal("proposal hash does not bind the response to the proposal")
	}
	// A failed endorsement must not be packaged.
	bad := proto.Clone(resp).(*pb.ProposalResponse)
	bad.Response = &pb.Response{Status: 500}
	if _, err := CreateSignedTx(prop, client, bad); err == nil {
		t.Fatal("unsuccessful response packaged")
	}
}

func TestBlockChaining(t *testing.T) {
	b0 := NewBlock(0, nil)
	b0.Data.Data = [][]byte{[]byte("a"), []byte("b")}
	b0.Header.DataHash = BlockDataHash(b0.Data)
	want := sha256.Sum256([]byte("ab"))
	if string(b0.Header.DataHash) != string(want[:]) {
		t.Fatal("data hash is not SHA-256 over the concatenated envelopes")
	}
	b1 := NewBlock(1, BlockHeaderHash(b0.Header))
	b0.Header.Number = 5
	if string(b1.Header.PreviousHash) == string(BlockHeaderHash(b0.Header)) {
		t.Fatal("header hash ignores the block number")
	}
}
