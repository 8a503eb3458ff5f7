package endorser

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/chaincode/lifecycle"
	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/ledger/txsim"
	"fabricrepro/internal/msp"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

const channel = "mychannel"

type fixture struct {
	bundle   *channelconfig.Bundle
	peer     *msp.SigningIdentity
	client   *msp.SigningIdentity
	outsider *msp.SigningIdentity // Org1MSP by name, but issued by a foreign CA
	db       *txsim.MemDB
	client0  pb.EndorserClient
}

func setup(t *testing.T) *fixture {
	t.Helper()
	n, err := txgen.NewNetwork(t.TempDir(), channel, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: txsim.NewMemDB(), bundle: n.Bundle, peer: n.Peer, client: n.Client}
	other := t.TempDir()
	if _, err := msp.Generate(other, msp.NetworkSpec{PeerOrgs: 1, Clients: 1}); err != nil {
		t.Fatal(err)
	}
	if f.outsider, err = msp.LoadSigningIdentity(filepath.Join(other, "peerOrganizations", "org1.example.com", "users", "client0@org1.example.com", "msp"), "Org1MSP"); err != nil {
		t.Fatal(err)
	}

	reg := chaincode.NewRegistry()
	if err := reg.Register(moneytransfer.Name, moneytransfer.Chaincode{}); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{ChannelID: channel, Bundle: f.bundle, Signer: f.peer, State: f.db, Chaincodes: reg})
	if err != nil {
		t.Fatal(err)
	}
	// Serve over an in-memory gRPC connection, stopped when the test ends.
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	pb.RegisterEndorserServer(srv, e)
	done := make(chan struct{})
	go func() { srv.Serve(lis); close(done) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); srv.Stop(); <-done })
	f.client0 = pb.NewEndorserClient(conn)
	return f
}

// commit applies the writes of an endorsed response to the state at block h,
// standing in for the committer.
func (f *fixture) commit(t *testing.T, resp *pb.ProposalResponse, h uint64) {
	t.Helper()
	prp := &pb.ProposalResponsePayload{}
	act := &pb.ChaincodeAction{}
	if err := proto.Unmarshal(resp.Payload, prp); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(prp.Extension, act); err != nil {
		t.Fatal(err)
	}
	sets, _, err := txsim.ParseResults(act.Results)
	if err != nil {
		t.Fatal(err)
	}
	b := &statedb.UpdateBatch{}
	for ns, kv := range sets {
		for i, w := range kv.Writes {
			b.Put(ns, w.Key, w.Value, statedb.Height{BlockNum: h, TxNum: uint64(i)})
		}
	}
	if err := f.db.ApplyUpdates(b, statedb.Height{BlockNum: h}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) propose(t *testing.T, signer protoutil.Signer, cc string, args [][]byte) (*pb.ProposalResponse, *pb.Proposal) {
	t.Helper()
	prop, _, err := protoutil.CreateChaincodeProposal(channel, cc, args, signer.Serialize())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := protoutil.SignProposal(prop, signer)
	if err != nil {
		t.Fatal(err)
	}
	return f.send(t, sp), prop
}

func (f *fixture) send(t *testing.T, sp *pb.SignedProposal) *pb.ProposalResponse {
	t.Helper()
	resp, err := f.client0.ProcessProposal(context.Background(), sp)
	if err != nil {
		t.Fatalf("ProcessProposal returned a gRPC error: %v", err)
	}
	return resp
}

func (f *fixture) deployAndCreate(t *testing.T) {
	t.Helper()
	args, err := lifecycle.DeployArgs(moneytransfer.Name, "1.0", policy.SignedByAnyMember("Org1MSP"))
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := f.propose(t, f.client, lifecycle.Name, args)
	if resp.Response.Status != 200 {
		t.Fatalf("deploy: %d %s", resp.Response.Status, resp.Response.Message)
	}
	f.commit(t, resp, 1)
	for i, a := range []string{"alice", "bob"} {
		resp, _ := f.propose(t, f.client, moneytransfer.Name, moneytransfer.CreateArgs(a, 100, nil))
		if resp.Response.Status != 200 {
			t.Fatalf("create: %d %s", resp.Response.Status, resp.Response.Message)
		}
		f.commit(t, resp, uint64(2+i))
	}
}

func TestValidTransfer(t *testing.T) {
	f := setup(t)
	f.deployAndCreate(t)
	resp, prop := f.propose(t, f.client, moneytransfer.Name, moneytransfer.TransferArgs("alice", "bob", 7, []byte("pad")))
	if resp.Response.Status != 200 {
		t.Fatalf("transfer: %d %s", resp.Response.Status, resp.Response.Message)
	}
	// The endorsement verifies against the peer's identity via the channel MSPs.
	id, err := f.bundle.MSPs.DeserializeIdentity(resp.Endorsement.Endorser)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Verify(append(append([]byte{}, resp.Payload...), resp.Endorsement.Endorser...), resp.Endorsement.Signature); err != nil {
		t.Fatalf("endorsement signature does not verify: %v", err)
	}
	// Bound to the proposal.
	prp := &pb.ProposalResponsePayload{}
	proto.Unmarshal(resp.Payload, prp)
	hdr := &cb.Header{}
	proto.Unmarshal(prop.Header, hdr)
	if string(prp.ProposalHash) != string(protoutil.ProposalHash(hdr, prop.Payload)) {
		t.Fatal("proposal hash mismatch")
	}
	act := &pb.ChaincodeAction{}
	proto.Unmarshal(prp.Extension, act)
	if act.ChaincodeId.Name != moneytransfer.Name || act.ChaincodeId.Version != "1.0" {
		t.Fatalf("chaincode id %v", act.ChaincodeId)
	}
	sets, order, err := txsim.ParseResults(act.Results)
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "lscc" || order[1] != moneytransfer.Name {
		t.Fatalf("namespaces %v: want the lscc lookup read and the chaincode's own", order)
	}
	kv := sets[moneytransfer.Name]
	if len(kv.Reads) != 2 || len(kv.Writes) != 2 || kv.Reads[0].Key != "alice" || kv.Writes[1].Key != "bob" {
		t.Fatalf("rwset %v", kv)
	}
	if kv.Reads[0].Version.BlockNum != 2 || kv.Reads[1].Version.BlockNum != 3 {
		t.Fatalf("read versions %v", kv.Reads)
	}
	// The response assembles into a transaction envelope.
	if _, err := protoutil.CreateSignedTx(prop, f.client, resp); err != nil {
		t.Fatal(err)
	}
}

func TestRejections(t *testing.T) {
	f := setup(t)
	f.deployAndCreate(t)
	good := func() *pb.SignedProposal {
		prop, _, _ := protoutil.CreateChaincodeProposal(channel, moneytransfer.Name, moneytransfer.TransferArgs("alice", "bob", 1, nil), f.client.Serialize())
		sp, _ := protoutil.SignProposal(prop, f.client)
		return sp
	}
	resign := func(mod func(*pb.Proposal, *cb.ChannelHeader, *cb.SignatureHeader)) *pb.SignedProposal {
		prop, _, _ := protoutil.CreateChaincodeProposal(channel, moneytransfer.Name, moneytransfer.TransferArgs("alice", "bob", 1, nil), f.client.Serialize())
		hdr := &cb.Header{}
		proto.Unmarshal(prop.Header, hdr)
		chdr, shdr := &cb.ChannelHeader{}, &cb.SignatureHeader{}
		proto.Unmarshal(hdr.ChannelHeader, chdr)
		proto.Unmarshal(hdr.SignatureHeader, shdr)
		mod(prop, chdr, shdr)
		hdr.ChannelHeader = protoutil.MarshalOrPanic(chdr)
		hdr.SignatureHeader = protoutil.MarshalOrPanic(shdr)
		prop.Header = protoutil.MarshalOrPanic(hdr)
		sp, _ := protoutil.SignProposal(prop, f.client)
		return sp
	}
	badSig := good()
	badSig.Signature[len(badSig.Signature)/2] ^= 0xff
	outsiderProp, _, _ := protoutil.CreateChaincodeProposal(channel, moneytransfer.Name, nil, f.outsider.Serialize())
	outsider, _ := protoutil.SignProposal(outsiderProp, f.outsider)
	unknownProp, _, _ := protoutil.CreateChaincodeProposal(channel, "nosuchcc", nil, f.client.Serialize())
	unknown, _ := protoutil.SignProposal(unknownProp, f.client)

	cases := []struct {
		name string
		sp   *pb.SignedProposal
		want string
	}{
		{"malformed bytes", &pb.SignedProposal{ProposalBytes: []byte{0xff, 0xff, 0xff}, Signature: []byte{1}}, "unmarshaling Proposal"},
		{"empty", &pb.SignedProposal{}, "invalid header type"},
		{"malformed header", &pb.SignedProposal{ProposalBytes: protoutil.MarshalOrPanic(&pb.Proposal{Header: []byte{0x0a, 0x05}})}, "unmarshaling Header"},
		{"bad creator signature", badSig, "signature over the proposal is not valid"},
		{"creator from foreign CA", outsider, "access denied"},
		{"unknown chaincode", unknown, "could not find chaincode with name 'nosuchcc'"},
		{"wrong txid", resign(func(_ *pb.Proposal, c *cb.ChannelHeader, _ *cb.SignatureHeader) { c.TxId = "abc" }), "invalid txid"},
		{"wrong type", resign(func(_ *pb.Proposal, c *cb.ChannelHeader, _ *cb.SignatureHeader) { c.Type = int32(cb.HeaderType_CONFIG) }), "invalid header type"},
		{"other channel", resign(func(_ *pb.Proposal, c *cb.ChannelHeader, _ *cb.SignatureHeader) { c.ChannelId = "elsewhere" }), "channel does not exist"},
		{"no nonce", resign(func(_ *pb.Proposal, _ *cb.ChannelHeader, s *cb.SignatureHeader) { s.Nonce = nil }), "invalid nonce"},
		{"bad payload", resign(func(p *pb.Proposal, _ *cb.ChannelHeader, _ *cb.SignatureHeader) { p.Payload = []byte{0xff} }), "ChaincodeProposalPayload"},
	}
	for _, c := range cases {
		resp := f.send(t, c.sp)
		if resp.Response == nil || resp.Response.Status != 500 || !strings.Contains(resp.Response.Message, c.want) {
			t.Errorf("%s: got %v, want status 500 containing %q", c.name, resp.Response, c.want)
		}
		if resp.Endorsement != nil {
			t.Errorf("%s: a refused proposal must not be endorsed", c.name)
		}
	}
	// A nil proposal arrives as an empty message over gRPC; call directly too.
	e := &Endorser{}
	if r, err := e.ProcessProposal(context.Background(), nil); err != nil || r.Response.Status != 500 {
		t.Errorf("nil proposal: %v %v", r, err)
	}
	// Chaincode errors come back with the chaincode's status, unsigned.
	resp, _ := f.propose(t, f.client, moneytransfer.Name, moneytransfer.TransferArgs("alice", "bob", 1000, nil))
	if resp.Response.Status != 500 || !strings.Contains(resp.Response.Message, "insufficient funds") || resp.Endorsement != nil {
		t.Errorf("chaincode error: %v", resp.Response)
	}
	// Deploying twice fails; deploying an uninstalled chaincode fails.
	args, _ := lifecycle.DeployArgs(moneytransfer.Name, "1.0", policy.SignedByAnyMember("Org1MSP"))
	if resp, _ := f.propose(t, f.client, lifecycle.Name, args); resp.Response.Status != 500 || !strings.Contains(resp.Response.Message, "already exists") {
		t.Errorf("second deploy: %v", resp.Response)
	}
	args, _ = lifecycle.DeployArgs("notinstalled", "1.0", policy.SignedByAnyMember("Org1MSP"))
	if resp, _ := f.propose(t, f.client, lifecycle.Name, args); resp.Response.Status != 500 {
		t.Errorf("uninstalled deploy: %v", resp.Response)
	}
	// The endorser still serves after all that.
	if resp := f.send(t, good()); resp.Response.Status != 200 {
		t.Errorf("good proposal after rejections: %v", resp.Response)
	}
}

type panicky struct{}

func (panicky) Init(chaincode.Stub) chaincode.Response   { return chaincode.Success(nil) }
func (panicky) Invoke(chaincode.Stub) chaincode.Response { panic("boom") }

func TestChaincodePanicIsContained(t *testing.T) {
	f := setup(t)
	reg := chaincode.NewRegistry()
	reg.RegisterSystem("boom", panicky{})
	e, err := New(Config{ChannelID: channel, Bundle: f.bundle, Signer: f.peer, State: f.db, Chaincodes: reg})
	if err != nil {
		t.Fatal(err)
	}
	prop, _, _ := protoutil.CreateChaincodeProposal(channel, "boom", nil, f.client.Serialize())
	sp, _ := protoutil.SignProposal(prop, f.client)
	resp, err := e.ProcessProposal(context.Background(), sp)
	if err != nil || resp.Response.Status != 500 || !strings.Contains(resp.Response.Message, "boom") {
		t.Fatalf("panic: %v %v", resp, err)
	}
}

func TestNewRequiresConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
}
