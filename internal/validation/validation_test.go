package validation

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"fabricrepro/internal/committer/txgen"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/ledger/statedb/leveldb"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

const cc = "money-transfer"

var (
	netOnce     sync.Once
	testNet     *txgen.Network
	otherNet    *txgen.Network // a second network whose CAs the channel does not know
	netSetupErr error
)

func networks(t *testing.T) (*txgen.Network, *txgen.Network) {
	t.Helper()
	netOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			netSetupErr = err
			return
		}
		if testNet, netSetupErr = txgen.NewNetwork(filepath.Join(dir, "a"), "mychannel", 1); netSetupErr != nil {
			return
		}
		otherNet, netSetupErr = txgen.NewNetwork(filepath.Join(dir, "b"), "mychannel", 1)
	})
	if netSetupErr != nil {
		t.Fatal(netSetupErr)
	}
	return testNet, otherNet
}

type fixture struct {
	net  *txgen.Network
	db   statedb.DB
	val  *TxValidator
	dups map[string]bool
}

func (f *fixture) TxIDExists(id string) (bool, error) { return f.dups[id], nil }

func newFixture(t *testing.T) *fixture {
	n, _ := networks(t)
	db, err := leveldb.Open(t.TempDir(), leveldb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := txgen.Deploy(db, cc, "1.0", policy.SignedByAnyMember("Org1MSP")); err != nil {
		t.Fatal(err)
	}
	f := &fixture{net: n, db: db, dups: map[string]bool{}}
	f.val = NewTxValidator(Config{ChannelID: n.Channel, MSPs: n.Bundle.MSPs, ApplicationMSPs: n.Bundle.ApplicationMSPs,
		State: db, Ledger: f, Workers: 2, Logf: t.Logf})
	return f
}

// transfer builds a valid transfer of a→b reading the given versions.
func (f *fixture) transfer(t *testing.T, a, b string, va, vb *statedb.Height) []byte {
	t.Helper()
	env, _, err := txgen.Endorse(f.net.Channel, txgen.Tx{Chaincode: cc, Version: "1.0", Args: [][]byte{[]byte("transfer"), []byte(a), []byte(b), []byte("1")},
		Results: txgen.Results(txgen.NsRW{Namespace: cc, Reads: []*kvrwsetKVRead{txgen.Read(a, va), txgen.Read(b, vb)},
			Writes: []*kvrwsetKVWrite{txgen.Write(a, []byte("x")), txgen.Write(b, []byte("y"))}}),
		Client: f.net.Client, Endorsers: []protoutil.Signer{f.net.Peer}})
	if err != nil {
		t.Fatal(err)
	}
	return protoutil.MarshalOrPanic(env)
}

func (f *fixture) block(t *testing.T, num uint64, envs ...[]byte) *cb.Block {
	t.Helper()
	b, err := f.net.Block(num, []byte("prev"), envs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func codes(filter TxFilter) []pb.TxValidationCode {
	out := make([]pb.TxValidationCode, len(filter))
	for i := range filter {
		out[i] = filter.Code(i)
	}
	return out
}

func wantCodes(t *testing.T, got TxFilter, want ...pb.TxValidationCode) {
	t.Helper()
	g := codes(got)
	if len(g) != len(want) {
		t.Fatalf("codes %v, want %v", g, want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Fatalf("codes %v, want %v", g, want)
		}
	}
}

func (f *fixture) run(t *testing.T, b *cb.Block) TxFilter {
	t.Helper()
	filter, err := f.val.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := (&MVCC{DB: f.db}).ValidateAndPrepare(b, filter)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.ApplyUpdates(batch, statedb.Height{BlockNum: b.Header.Number}); err != nil {
		t.Fatal(err)
	}
	return filter
}

func TestValidTransfersCommit(t *testing.T) {
	f := newFixture(t)
	filter := f.run(t, f.block(t, 1, f.transfer(t, "a", "b", nil, nil), f.transfer(t, "c", "d", nil, nil)))
	wantCodes(t, filter, pb.TxValidationCode_VALID, pb.TxValidationCode_VALID)
	v, _ := f.db.GetState(cc, "d")
	if v == nil || v.Version != (statedb.Height{BlockNum: 1, TxNum: 1}) {
		t.Fatalf("d = %+v", v)
	}
}

func TestMVCCInBlockConflictInvalidatesLater(t *testing.T) {
	f := newFixture(t)
	// Both read a and b as absent; the first one wins, the second conflicts.
	filter := f.run(t, f.block(t, 1, f.transfer(t, "a", "b", nil, nil), f.transfer(t, "b", "a", nil, nil), f.transfer(t, "e", "f", nil, nil)))
	wantCodes(t, filter, pb.TxValidationCode_VALID, pb.TxValidationCode_MVCC_READ_CONFLICT, pb.TxValidationCode_VALID)
}

func TestMVCCStaleReadInvalid(t *testing.T) {
	f := newFixture(t)
	f.run(t, f.block(t, 1, f.transfer(t, "a", "b", nil, nil)))
	cur := &statedb.Height{BlockNum: 1, TxNum: 0}
	stale := &statedb.Height{BlockNum: 0, TxNum: 7}
	filter := f.run(t, f.block(t, 2, f.transfer(t, "a", "b", stale, cur), f.transfer(t, "a", "b", cur, cur)))
	wantCodes(t, filter, pb.TxValidationCode_MVCC_READ_CONFLICT, pb.TxValidationCode_VALID)
	// A read of a key as absent that now exists is stale too.
	filter = f.run(t, f.block(t, 3, f.transfer(t, "a", "z", nil, nil)))
	wantCodes(t, filter, pb.TxValidationCode_MVCC_READ_CONFLICT)
}

func TestVSCCForgedEndorsement(t *testing.T) {
	f := newFixture(t)
	raw := f.transfer(t, "a", "b", nil, nil)
	// Flip a byte of the endorsement signature and re-sign the envelope as
	// the client, so only the endorsement is wrong.
	forged := forgeEndorsement(t, f, raw, func(e *pb.Endorsement) { e.Signature[len(e.Signature)-3] ^= 0xff })
	filter := f.run(t, f.block(t, 1, forged))
	wantCodes(t, filter, pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE)
}

func TestVSCCEndorserFromUnknownCA(t *testing.T) {
	f := newFixture(t)
	_, other := networks(t)
	env, _, err := txgen.Endorse(f.net.Channel, txgen.Tx{Chaincode: cc, Version: "1.0", Args: [][]byte{[]byte("x")},
		Results: txgen.Results(txgen.NsRW{Namespace: cc, Writes: []*kvrwsetKVWrite{txgen.Write("a", []byte("1"))}}),
		Client:  f.net.Client, Endorsers: []protoutil.Signer{other.Peer}})
	if err != nil {
		t.Fatal(err)
	}
	filter := f.run(t, f.block(t, 1, protoutil.MarshalOrPanic(env)))
	wantCodes(t, filter, pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE)
}

func TestUnknownChaincodeAndWrongVersion(t *testing.T) {
	f := newFixture(t)
	mk := func(name, ver string) []byte {
		env, _, err := txgen.Endorse(f.net.Channel, txgen.Tx{Chaincode: name, Version: ver, Args: [][]byte{[]byte("x")},
			Results: txgen.Results(txgen.NsRW{Namespace: name, Writes: []*kvrwsetKVWrite{txgen.Write("a", []byte("1"))}}),
			Client:  f.net.Client, Endorsers: []protoutil.Signer{f.net.Peer}})
		if err != nil {
			t.Fatal(err)
		}
		return protoutil.MarshalOrPanic(env)
	}
	filter := f.run(t, f.block(t, 1, mk("nope", "1.0"), mk(cc, "2.0")))
	wantCodes(t, filter, pb.TxValidationCode_INVALID_OTHER_REASON, pb.TxValidationCode_EXPIRED_CHAINCODE)
}

func TestDuplicateTxID(t *testing.T) {
	f := newFixture(t)
	tx := f.transfer(t, "a", "b", nil, nil)
	other := f.transfer(t, "c", "d", nil, nil)
	filter := f.run(t, f.block(t, 1, tx, tx))
	wantCodes(t, filter, pb.TxValidationCode_VALID, pb.TxValidationCode_DUPLICATE_TXID)
	// Once the block store knows it, a later block's copy is a duplicate too.
	env := &cb.Envelope{}
	mustUnmarshal(t, other, env)
	_, chdr, _, _ := protoutil.UnmarshalPayload(env)
	f.dups[chdr.TxId] = true
	filter, _ = f.val.Validate(f.block(t, 2, other))
	wantCodes(t, filter, pb.TxValidationCode_DUPLICATE_TXID)
}

func TestMalformedEnvelopes(t *testing.T) {
	f := newFixture(t)
	good := f.transfer(t, "a", "b", nil, nil)
	badPayload := protoutil.MarshalOrPanic(&cb.Envelope{Payload: []byte{0xff, 0xff, 0xff}, Signature: []byte("sig")})
	garbage := []byte{0x0a, 0xff, 0x01}
	noHeader := protoutil.MarshalOrPanic(&cb.Envelope{Payload: protoutil.MarshalOrPanic(&cb.Payload{Data: []byte("x")})})
	badSig := forgeEnvelopeSig(t, good)
	filter, err := f.val.Validate(f.block(t, 1, badPayload, garbage, noHeader, badSig, nil))
	if err != nil {
		t.Fatal(err)
	}
	wantCodes(t, filter, pb.TxValidationCode_BAD_PAYLOAD, pb.TxValidationCode_INVALID_OTHER_REASON,
		pb.TxValidationCode_BAD_COMMON_HEADER, pb.TxValidationCode_BAD_CREATOR_SIGNATURE, pb.TxValidationCode_NIL_ENVELOPE)
}

func TestLSCCDeployThroughPipeline(t *testing.T) {
	f := newFixture(t)
	deploy := func(name string) []byte {
		cd := &lscc.ChaincodeData{Name: name, Version: "1", Escc: "escc", Vscc: "vscc", Policy: protoutil.MarshalOrPanic(policy.SignedByAnyMember("Org1MSP"))}
		env, _, err := txgen.Endorse(f.net.Channel, txgen.Tx{Chaincode: "lscc", Version: "1.2", Args: [][]byte{[]byte("deploy"), []byte(name)},
			Results: txgen.Results(txgen.NsRW{Namespace: "lscc", Reads: []*kvrwsetKVRead{txgen.Read(name, nil)}, Writes: []*kvrwsetKVWrite{txgen.Write(name, cd.Marshal())}}),
			Client:  f.net.Client, Endorsers: []protoutil.Signer{f.net.Peer}})
		if err != nil {
			t.Fatal(err)
		}
		return protoutil.MarshalOrPanic(env)
	}
	filter := f.run(t, f.block(t, 1, deploy("newcc"), deploy(cc)))
	wantCodes(t, filter, pb.TxValidationCode_VALID, pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE)
	if v, _ := f.db.GetState("lscc", "newcc"); v == nil {
		t.Fatal("deploy not applied")
	}
	// An application chaincode may not write lscc.
	env, _, _ := txgen.Endorse(f.net.Channel, txgen.Tx{Chaincode: cc, Version: "1.0", Args: [][]byte{[]byte("x")},
		Results: txgen.Results(txgen.NsRW{Namespace: "lscc", Writes: []*kvrwsetKVWrite{txgen.Write("evil", []byte("1"))}}),
		Client:  f.net.Client, Endorsers: []protoutil.Signer{f.net.Peer}})
	filter = f.run(t, f.block(t, 2, protoutil.MarshalOrPanic(env)))
	wantCodes(t, filter, pb.TxValidationCode_ILLEGAL_WRITESET)
}

func TestVerifyBlock(t *testing.T) {
	f := newFixture(t)
	b := f.block(t, 1, f.transfer(t, "a", "b", nil, nil))
	if err := VerifyBlock(b, f.net.Bundle.BlockValidation); err != nil {
		t.Fatal(err)
	}
	b.Header.Number = 2 // the signature covers the header
	b.Header.DataHash = protoutil.BlockDataHash(b.Data)
	if err := VerifyBlock(b, f.net.Bundle.BlockValidation); err == nil || !strings.Contains(err.Error(), "BlockValidation") {
		t.Fatalf("tampered header accepted: %v", err)
	}
	b = f.block(t, 1, f.transfer(t, "a", "b", nil, nil))
	b.Data.Data = append(b.Data.Data, []byte("extra"))
	if err := VerifyBlock(b, f.net.Bundle.BlockValidation); err == nil {
		t.Fatal("tampered data accepted")
	}
	// Signed by a peer instead of the orderer.
	b = f.block(t, 1)
	protoutil.SignBlock(b, f.net.Peer, nil)
	if err := VerifyBlock(b, f.net.Bundle.BlockValidation); err == nil {
		t.Fatal("block signed by a peer accepted")
	}
}
