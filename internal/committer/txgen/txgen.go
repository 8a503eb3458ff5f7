// Package txgen builds what a committer consumes without running the
// endorser: a test network (crypto material, genesis block), endorsed and
// client-signed transactions with hand-made read-write sets, and blocks
// signed as the orderer signs them. The committer benchmark, the committer's
// unit tests and the integration tests use it; it goes through protoutil's
// builders, so the wire format is the one loadgen and the endorser produce.
package txgen

import (
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// Network is a channel with one orderer org and one or more peer orgs.
type Network struct {
	CryptoDir string
	Channel   string
	Genesis   *cb.Block
	Bundle    *channelconfig.Bundle
	Orderer   *msp.SigningIdentity
	Peer      *msp.SigningIdentity // peer0 of Org1
	Client    *msp.SigningIdentity // client0 of Org1
}

// NewNetwork generates crypto material in dir (which must not exist yet)
// for peerOrgs organizations and builds the channel's genesis block.
func NewNetwork(dir, channel string, peerOrgs int) (*Network, error) {
	return NewNetworkBatch(dir, channel, peerOrgs, channelconfig.DefaultBatch)
}

// NewNetworkBatch is NewNetwork with the orderer's batch parameters.
func NewNetworkBatch(dir, channel string, peerOrgs int, batch channelconfig.Batch) (*Network, error) {
	if _, err := msp.Generate(dir, msp.NetworkSpec{OrdererOrgs: 1, Orderers: 1, PeerOrgs: peerOrgs, Peers: 1, Clients: 1}); err != nil {
		return nil, err
	}
	orgs, err := channelconfig.OrgsFromCryptoDir(dir)
	if err != nil {
		return nil, err
	}
	gen, err := channelconfig.GenesisBlock(channel, orgs, batch)
	if err != nil {
		return nil, err
	}
	return LoadNetwork(dir, gen)
}

// LoadNetwork loads the identities of an existing crypto directory.
func LoadNetwork(dir string, genesis *cb.Block) (*Network, error) {
	b, err := channelconfig.FromGenesisBlock(genesis)
	if err != nil {
		return nil, err
	}
	n := &Network{CryptoDir: dir, Channel: b.ChannelID, Genesis: genesis, Bundle: b}
	if n.Orderer, err = msp.LoadSigningIdentity(filepath.Join(dir, "ordererOrganizations/orderer.example.com/orderers/orderer0.orderer.example.com/msp"), "OrdererMSP"); err != nil {
		return nil, err
	}
	if n.Peer, err = msp.LoadSigningIdentity(filepath.Join(dir, "peerOrganizations/org1.example.com/peers/peer0.org1.example.com/msp"), "Org1MSP"); err != nil {
		return nil, err
	}
	if n.Client, err = msp.LoadSigningIdentity(filepath.Join(dir, "peerOrganizations/org1.example.com/users/client0@org1.example.com/msp"), "Org1MSP"); err != nil {
		return nil, err
	}
	return n, nil
}

// WriteGenesis writes the genesis block to path.
func (n *Network) WriteGenesis(path string) error {
	return os.WriteFile(path, protoutil.MarshalOrPanic(n.Genesis), 0o644)
}

// NsRW is one namespace's reads and writes.
type NsRW struct {
	Namespace string
	Reads     []*kvrwset.KVRead
	Writes    []*kvrwset.KVWrite
}

// Read is a read of key at version v (nil: the key was absent).
func Read(key string, v *statedb.Height) *kvrwset.KVRead {
	r := &kvrwset.KVRead{Key: key}
	if v != nil {
		r.Version = &kvrwset.Version{BlockNum: v.BlockNum, TxNum: v.TxNum}
	}
	return r
}

// Write is a write of value to key.
func Write(key string, value []byte) *kvrwset.KVWrite {
	return &kvrwset.KVWrite{Key: key, Value: value}
}

// Results marshals a TxReadWriteSet as the simulator would.
func Results(sets ...NsRW) []byte {
	tx := &rwset.TxReadWriteSet{DataModel: rwset.TxReadWriteSet_KV}
	for _, s := range sets {
		kv := &kvrwset.KVRWSet{Reads: s.Reads, Writes: s.Writes}
		tx.NsRwset = append(tx.NsRwset, &rwset.NsReadWriteSet{Namespace: s.Namespace, Rwset: protoutil.MarshalOrPanic(kv)})
	}
	return protoutil.MarshalOrPanic(tx)
}

// Tx describes one endorsed transaction to build.
type Tx struct {
	Chaincode string
	Version   string
	Args      [][]byte
	Results   []byte           // marshaled TxReadWriteSet
	Client    protoutil.Signer // creator; signs the proposal and the envelope
	Endorsers []protoutil.Signer
}

// Endorse builds the transaction envelope: proposal, one proposal response
// per endorser, and the client-signed envelope. It returns the envelope and
// its tx ID.
func Endorse(channel string, t Tx) (*cb.Envelope, string, error) {
	prop, txID, err := protoutil.CreateChaincodeProposal(channel, t.Chaincode, t.Args, t.Client.Serialize())
	if err != nil {
		return nil, "", err
	}
	hdr := &cb.Header{}
	if err := proto.Unmarshal(prop.Header, hdr); err != nil {
		return nil, "", err
	}
	ccID := &pb.ChaincodeID{Name: t.Chaincode, Version: t.Version}
	var resps []*pb.ProposalResponse
	for _, e := range t.Endorsers {
		r, err := protoutil.CreateProposalResponse(hdr, prop.Payload, ccID, t.Results, &pb.Response{Status: 200}, e)
		if err != nil {
			return nil, "", err
		}
		resps = append(resps, r)
	}
	env, err := protoutil.CreateSignedTx(prop, t.Client, resps...)
	return env, txID, err
}

// Block builds block num chained to prev from marshaled envelopes and signs
// it with the orderer identity.
func (n *Network) Block(num uint64, prev []byte, envs [][]byte) (*cb.Block, error) {
	b := protoutil.NewBlock(num, prev)
	b.Data.Data = envs
	b.Header.DataHash = protoutil.BlockDataHash(b.Data)
	b.Metadata.Metadata[cb.BlockMetadataIndex_LAST_CONFIG] = protoutil.MarshalOrPanic(&cb.Metadata{Value: protoutil.MarshalOrPanic(&cb.LastConfig{Index: 0})})
	if err := protoutil.SignBlock(b, n.Orderer, nil); err != nil {
		return nil, err
	}
	return b, nil
}

// Deploy writes a chaincode definition straight into the lscc namespace of a
// state database, at height (0, 0), as if block 0 had instantiated it. The
// committer benchmark uses this instead of a deploy transaction so that
// every measured block holds only transfers.
func Deploy(db statedb.DB, name, version string, pol *cb.SignaturePolicyEnvelope) error {
	cd := &lscc.ChaincodeData{Name: name, Version: version, Escc: "escc", Vscc: "vscc", Policy: protoutil.MarshalOrPanic(pol)}
	b := &statedb.UpdateBatch{}
	b.Put(lscc.Namespace, name, cd.Marshal(), statedb.Height{})
	sp, ok, err := db.Savepoint()
	if err != nil {
		return err
	}
	if !ok {
		sp = statedb.Height{}
	}
	if err := db.ApplyUpdates(b, sp); err != nil {
		return fmt.Errorf("deploy %s: %w", name, err)
	}
	return nil
}

// Forged is a signer that presents identity's certificate but signs with
// key's private key: its signatures are well-formed and verify under key,
// never under identity. The committer benchmark's mutations use it for an
// envelope the creator did not sign (BAD_CREATOR_SIGNATURE) and for an
// endorsement its named endorser did not sign (ENDORSEMENT_POLICY_FAILURE).
func Forged(identity, key protoutil.Signer) protoutil.Signer { return forged{identity, key} }

type forged struct{ identity, key protoutil.Signer }

func (f forged) Sign(msg []byte) ([]byte, error) { return f.key.Sign(msg) }
func (f forged) Serialize() []byte               { return f.identity.Serialize() }
