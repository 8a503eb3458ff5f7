package txverify

// The rules of Fabric v2.x/v3.x's committer (Options.Rules "v2"), our own
// model of them, beside the Fabric 1.2 model of txverify.go (which stays as
// it was: "v1" rules). References are to the upstream sources of
// hyperledger/fabric v3.1.5 (86c1172b, ../shared/upstream/fabric-3.1.5-*).
// v2.5.16 (f871cf92, ../shared/upstream/fabric-2.5.16-*) has the same code at
// the same lines, except: core/chaincode/lifecycle/deployedcc_infoprovider.go
// one line later (ValidationInfo :314, ImplicitCollectionEndorsementPolicyAsBytes
// :266, CollectionValidationInfo :343), lifecycle.go:270
// LifecycleEndorsementPolicyAsBytes, validator_keylevel.go:244 Validate,
// kvledger/txmgmt/validation/validator.go:134 validateTx, :179 validateKVRead,
// :272 validateKVReadHash; and its block signatures are checked by
// internal/peer/gossip/mcs.go:123 VerifyBlock (:173-188: the BlockValidation
// policy over value || signature header || header bytes; v2.5 has no SmartBFT).
//
// Per block, before any transaction (the peer's deliver client refuses a
// block that fails these, so a kept ledger holding one is broken):
//
//   - the header's data hash is the hash of the block's data, and
//   - the SIGNATURES metadata satisfies the channel's /Channel/Orderer/
//     BlockValidation policy (protoutil/blockutils.go:251 BlockSignatureVerifier;
//     v2.5.16: internal/peer/gossip/mcs.go:123 VerifyBlock): each
//     signature signs metadata.Value || signature_header || header bytes by
//     the signature header's creator; a SmartBFT signature may name its
//     consenter by an IdentifierHeader instead (blockutils.go:266-276: the
//     consenter's identity from the channel's Orderers value, signed bytes
//     value || identifier_header || header). Raft's BlockValidation is
//     ImplicitMeta "ANY Writers" of the orderer organizations; SmartBFT's is
//     a signature policy over the consenters' identities, a quorum of
//     ceil((n+f+1)/2) (common/policies/bft.go:24-57 EncodeBFTBlockVerificationPolicy).
//     The genesis block (block 0, made by configtxgen and given to each node
//     by the channel participation API) carries no signature and is not
//     checked.
//
// Per transaction, in core/committer/txvalidator/v20/validator.go:297
// validateTx's order (v2.5.16: same file, validateTx):
//
//  1. ValidateTransaction (core/common/validation/msgvalidation.go:248): the
//     envelope's layers and header fields, the creator (deserialized and
//     validated by its MSP) and its signature over the payload
//     (msgvalidation.go:274-277 → BAD_CREATOR_SIGNATURE), the transaction ID
//     as the hash of nonce and creator (msgvalidation.go:288-295 →
//     BAD_PROPOSAL_TXID), one action per endorser transaction;
//  2. the channel (validator.go:355 → TARGET_CHAIN_NOT_FOUND);
//  3. the ID against every earlier block of the ledger (validator.go:365,460
//     checkTxIdDupsLedger → DUPLICATE_TXID);
//  4. the dispatcher (core/committer/txvalidator/v20/plugindispatcher/
//     dispatcher.go:102 Dispatch): the invoked chaincode and every namespace
//     the transaction writes (dispatcher.go:159-184) is validated with its
//     validation info (core/chaincode/lifecycle/deployedcc_infoprovider.go:313
//     ValidationInfo): for _lifecycle, the channel's
//     /Channel/Application/LifecycleEndorsement policy (lifecycle.go:274); for
//     a chaincode, the ValidationInfo its _lifecycle definition
//     (namespaces/fields/<name>/ValidationInfo, written by the ledger's own
//     commit transaction) names; a namespace with no definition is
//     INVALID_CHAINCODE unless Options.Policy stands for it. The plugin
//     (core/handlers/validation/builtin/v20/validation_logic.go:185 and
//     core/common/validation/statebased/validator_keylevel.go:245,87
//     Evaluate, v20.go:105-162): every public write, and every hashed write
//     of a collection, is checked against the chaincode's policy, a
//     collection's own (an implicit org collection _implicit_org_<MSP>:
//     /Channel/Application/<org>/Endorsement, deployedcc_infoprovider.go:265),
//     each at most once per transaction, and the chaincode's policy at least
//     once (FAB-9473, validator_keylevel.go:142); an endorsement's
//     signature is over proposal response payload || endorser
//     (validator_keylevel.go:247-261), identities deduplicated and bad
//     signatures dropped as common/policies/policy.go:363
//     SignatureSetToValidIdentities does. A failure is
//     ENDORSEMENT_POLICY_FAILURE (dispatcher.go:212);
//  5. duplicate IDs within the block (validator.go:248,279 markTXIdDuplicates);
//  6. MVCC (core/ledger/kvledger/txmgmt/validation/validator.go:81,135
//     validateAndPrepareBatch, validateTx): in block order, a public read
//     (validator.go:180) or a collection's hashed read (validator.go:275) of a
//     key an earlier valid transaction of the block wrote, or of another
//     version than the committed one, is MVCC_READ_CONFLICT; a range query
//     is not modelled (its transaction is PHANTOM_READ_CONFLICT here unless
//     sampled out). Valid writes update the state at (block, index).
//
// Not modelled (none occurs in our experiments' ledgers): key-level
// endorsement (metadata writes are applied, not evaluated: a transaction
// writing a key with a VALIDATION_PARAMETER is refused as not modelled),
// static collections' own policies other than the implicit ones,
// configuration updates' policies (a later CONFIG transaction is VALID once
// its creator's signature verifies, as in the v1 model), NodeOU
// classification beyond the OU names (peer, client, admin, orderer), CRLs,
// the legacy lscc lifecycle on a v2 channel.

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/blockfile"
	fcrypto "fabricrepro/internal/crypto"
	"fabricrepro/internal/msp"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	mspproto "fabricrepro/internal/protos/msp"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// LifecycleNamespace is v2's chaincode lifecycle (core/chaincode/lifecycle/lifecycle.go LifecycleNamespace).
const LifecycleNamespace = "_lifecycle"

// Codes and roles of Fabric v2's protos (fabric-protos-go-apiv2 peer/transaction.pb.go:55-56,
// msp/msp_principal.pb.go:96) that our Fabric 1.2-era protos lack.
const (
	codeInvalidWriteset  = pb.TxValidationCode(24)
	codeInvalidChaincode = pb.TxValidationCode(25)
	roleOrderer          = mspproto.MSPRole_MSPRoleType(4)
)

// implicitPrefix names an organization's implicit collection
// (core/common/privdata/implicitcollection/name.go: "_implicit_org_" + MSP ID).
const implicitPrefix = "_implicit_org_"

// RulesOf says which committer's rules a ledger's first (config) block
// calls for: "v2" where the channel's Application group carries a V2_0 or
// later capability (Fabric v2's new lifecycle and validation, core/common/
// ccprovider and common/capabilities/application.go V2_0), else "v1".
func RulesOf(first *cb.Block) string {
	if !isConfigBlock(first) {
		return "v1"
	}
	_, _, cfg, err := configEnvelope(first.Data.Data[0])
	if err != nil || cfg.ChannelGroup == nil {
		return "v1"
	}
	for _, g := range []*cb.ConfigGroup{cfg.ChannelGroup.Groups["Application"], cfg.ChannelGroup} {
		if g == nil || g.Values["Capabilities"] == nil {
			continue
		}
		caps := &cb.Capabilities{}
		if proto.Unmarshal(g.Values["Capabilities"].Value, caps) != nil {
			continue
		}
		for name := range caps.Capabilities {
			if strings.HasPrefix(name, "V2_") || strings.HasPrefix(name, "V3_") {
				return "v2"
			}
		}
	}
	return "v1"
}

// v2Config is what a channel configuration gives the v2 rules.
type v2Config struct {
	member   *Membership
	mgr      *msp.Manager
	policies map[string]*cb.Policy      // "/Channel/Application/Org1/Endorsement" → policy
	groups   map[string]*cb.ConfigGroup // "/Channel/Application" → group
	orgMSP   map[string]string          // application organization name → MSP ID
	// consenters by numeric ID: SerializedIdentity bytes (SmartBFT's Orderers value)
	consenters map[uint32][]byte
	consensus  string
}

func newV2Config(cfg *cb.Config, channel string, dirs *Membership) (*v2Config, error) {
	m, err := membershipFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	m.Channel = channel
	if dirs != nil {
		m.merge(dirs)
	}
	c := &v2Config{member: m, mgr: m.Manager(), policies: map[string]*cb.Policy{}, groups: map[string]*cb.ConfigGroup{},
		orgMSP: map[string]string{}, consenters: map[uint32][]byte{}}
	var walk func(path string, g *cb.ConfigGroup)
	walk = func(path string, g *cb.ConfigGroup) {
		c.groups[path] = g
		for name, p := range g.Policies {
			if p != nil && p.Policy != nil {
				c.policies[path+"/"+name] = p.Policy
			}
		}
		for name, sub := range g.Groups {
			walk(path+"/"+name, sub)
		}
	}
	walk("/Channel", cfg.ChannelGroup)
	if app := cfg.ChannelGroup.Groups["Application"]; app != nil {
		for name, org := range app.Groups {
			if v := org.Values["MSP"]; v != nil {
				if x, _, err := mspFromConfigValue(v.Value); err == nil && x != nil {
					c.orgMSP[name] = x.ID
				}
			}
		}
	}
	if ord := cfg.ChannelGroup.Groups["Orderer"]; ord != nil {
		if v := ord.Values["ConsensusType"]; v != nil {
			c.consensus = protoString(v.Value, 1)
		}
		if v := ord.Values["Orderers"]; v != nil {
			// common/configuration.proto Orderers{consenter_mapping=1}, Consenter{id=1, msp_id=4, identity=5}
			for _, raw := range protoBytesAll(v.Value, 1) {
				id := protoVarint(raw, 1)
				sid := protoutil.MarshalOrPanic(&mspproto.SerializedIdentity{Mspid: protoString(raw, 4), IdBytes: protoBytes(raw, 5)})
				c.consenters[uint32(id)] = sid
			}
		}
	}
	return c, nil
}

// validIdentities is common/policies/policy.go:363 SignatureSetToValidIdentities:
// deserializable identities, first valid occurrence of each, whose signature verifies.
func (c *v2Config) validIdentities(set []policy.SignedData) []*msp.Identity {
	return policy.ValidIdentities(set, c.mgr, false)
}

// evalRef evaluates the channel configuration's policy at path.
func (c *v2Config) evalRef(path string, ids []*msp.Identity) error {
	p := c.policies[path]
	if p == nil {
		return fmt.Errorf("no policy %s in the channel configuration", path)
	}
	switch cb.Policy_PolicyType(p.Type) {
	case cb.Policy_SIGNATURE:
		env := &cb.SignaturePolicyEnvelope{}
		if err := proto.Unmarshal(p.Value, env); err != nil {
			return fmt.Errorf("policy %s: %w", path, err)
		}
		return evalSignaturePolicy(env, ids)
	case cb.Policy_IMPLICIT_META:
		// common/policies/implicitmeta.go: the sub-policy of every child group, ANY (1), ALL (n), MAJORITY (n/2+1)
		im := &cb.ImplicitMetaPolicy{}
		if err := proto.Unmarshal(p.Value, im); err != nil {
			return fmt.Errorf("policy %s: %w", path, err)
		}
		group := path[:strings.LastIndex(path, "/")]
		g := c.groups[group]
		if g == nil {
			return fmt.Errorf("policy %s: no group", path)
		}
		var subs []string
		for name := range g.Groups {
			if c.policies[group+"/"+name+"/"+im.SubPolicy] != nil {
				subs = append(subs, group+"/"+name+"/"+im.SubPolicy)
			}
		}
		sort.Strings(subs)
		need := 0
		switch im.Rule {
		case cb.ImplicitMetaPolicy_ANY:
			need = 1
		case cb.ImplicitMetaPolicy_ALL:
			need = len(subs)
		case cb.ImplicitMetaPolicy_MAJORITY:
			need = len(subs)/2 + 1
		}
		if len(subs) == 0 {
			need = 0
		}
		got := 0
		for _, s := range subs {
			if c.evalRef(s, ids) == nil {
				got++
			}
		}
		if got < need {
			return fmt.Errorf("implicit policy %s: %d of %d sub-policies %s satisfied, %d needed", path, got, len(subs), im.SubPolicy, need)
		}
		return nil
	}
	return fmt.Errorf("policy %s of type %d", path, p.Type)
}

// evalApplicationPolicy evaluates a marshaled ApplicationPolicy (peer/policy.proto:
// signature_policy=1 | channel_config_policy_reference=2), as
// core/common/validation/statebased's policy support does.
func (c *v2Config) evalApplicationPolicy(raw []byte, ids []*msp.Identity) error {
	if ref := protoString(raw, 2); ref != "" {
		return c.evalRef(ref, ids)
	}
	if sp := protoBytes(raw, 1); sp != nil {
		env := &cb.SignaturePolicyEnvelope{}
		if err := proto.Unmarshal(sp, env); err != nil {
			return err
		}
		return evalSignaturePolicy(env, ids)
	}
	return errors.New("empty application policy")
}

// evalSignaturePolicy is common/cauthdsl's evaluation (policy.Evaluate) of
// env over identities that SignatureSetToValidIdentities has kept.
func evalSignaturePolicy(env *cb.SignaturePolicyEnvelope, ids []*msp.Identity) error {
	return policy.Evaluate(env.Rule, len(env.Identities), policy.IdentitySigners(ids, func(i int, id *msp.Identity) bool {
		return satisfiesPrincipal(id, env.Identities[i])
	}))
}

// satisfiesPrincipal is msp/mspimpl.go SatisfiesPrincipal for the principals
// our channels use: a ROLE (member; peer, client, admin, orderer by NodeOU)
// or an IDENTITY (the same MSP ID and certificate).
func satisfiesPrincipal(id *msp.Identity, p *mspproto.MSPPrincipal) bool {
	switch p.PrincipalClassification {
	case mspproto.MSPPrincipal_ROLE:
		role := &mspproto.MSPRole{}
		if proto.Unmarshal(p.Principal, role) != nil || role.MspIdentifier != id.MSPID {
			return false
		}
		switch role.Role {
		case roleOrderer:
			return id.HasOU(msp.OUOrderer)
		case mspproto.MSPRole_ADMIN:
			return id.HasOU("admin")
		}
		return policy.SatisfiesRole(id, role)
	case mspproto.MSPPrincipal_IDENTITY:
		sid := &mspproto.SerializedIdentity{}
		if proto.Unmarshal(p.Principal, sid) != nil || sid.Mspid != id.MSPID {
			return false
		}
		other, err := parseCertPEM(sid.IdBytes)
		return err == nil && bytes.Equal(other, id.Cert.Raw)
	}
	return false
}

// verifyBlockV2 checks a delivered block's data hash and orderer signatures.
func (c *v2Config) verifyBlock(b *cb.Block) error {
	if b.Header == nil || b.Data == nil || b.Metadata == nil {
		return errors.New("block is missing header, data or metadata")
	}
	if !bytes.Equal(b.Header.DataHash, protoutil.BlockDataHash(b.Data)) {
		return errors.New("header data hash does not match the data")
	}
	if len(b.Metadata.Metadata) <= int(cb.BlockMetadataIndex_SIGNATURES) {
		return errors.New("no signatures in block metadata")
	}
	md := &cb.Metadata{}
	raw := b.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES]
	if err := proto.Unmarshal(raw, md); err != nil {
		return fmt.Errorf("signature metadata: %w", err)
	}
	hdr := protoutil.BlockHeaderBytes(b.Header)
	// common/common.proto MetadataSignature{signature_header=1, signature=2, identifier_header=3}: our
	// protos predate field 3, read here from the raw bytes (Metadata.signatures=2).
	var set []policy.SignedData
	for _, ms := range protoBytesAll(raw, 2) {
		shdrRaw, sig, idhRaw := protoBytes(ms, 1), protoBytes(ms, 2), protoBytes(ms, 3)
		if len(shdrRaw) == 0 && len(idhRaw) > 0 {
			// blockutils.go:266-276: IdentifierHeader{identifier=1}
			sid := c.consenters[uint32(protoVarint(idhRaw, 1))]
			if sid == nil {
				continue
			}
			set = append(set, policy.SignedData{Identity: sid, Data: concat(md.Value, idhRaw, hdr), Signature: sig})
			continue
		}
		shdr := &cb.SignatureHeader{}
		if err := proto.Unmarshal(shdrRaw, shdr); err != nil {
			return fmt.Errorf("signature header: %w", err)
		}
		set = append(set, policy.SignedData{Identity: shdr.Creator, Data: concat(md.Value, shdrRaw, hdr), Signature: sig})
	}
	if len(set) == 0 {
		return errors.New("no orderer signature")
	}
	if err := c.evalRef("/Channel/Orderer/BlockValidation", c.validIdentities(set)); err != nil {
		return fmt.Errorf("%d orderer signature(s) do not satisfy /Channel/Orderer/BlockValidation (%s): %w", len(set), c.consensus, err)
	}
	return nil
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// v2Height is a committed version.
type v2Height struct{ block, tx uint64 }

type v2Key struct{ ns, coll, key string } // coll "" for public state; key: the key hash for a collection

// v2State is the world state the v2 rules replay: each key's version (public
// and hashed), and the values of _lifecycle's public keys (the definitions).
type v2State struct {
	version   map[v2Key]*v2Height // nil: deleted
	lifecycle map[string][]byte
	hasVP     map[v2Key]bool // keys written with a VALIDATION_PARAMETER metadata entry
}

type v2Verifier struct {
	o      Options
	cfg    *v2Config
	dirs   *Membership
	st     v2State
	index  txIDIndex
	policy []byte // Options.Policy as an ApplicationPolicy, for a namespace the ledger does not define
	used   map[string]bool
}

// verifyV2 is Verify with the v2 rules.
func verifyV2(blocks []*cb.Block, o Options, res *Result) error {
	first := blocks[0]
	if !isConfigBlock(first) {
		return errors.New("the v2 rules need the ledger's config block first (block 0): the orderers' and organizations' identities and the channel's policies come from it")
	}
	chdr, _, cfg, err := configEnvelope(first.Data.Data[0])
	if err != nil {
		return fmt.Errorf("block %d: config: %w", first.Header.Number, err)
	}
	v := &v2Verifier{o: o, dirs: &Membership{MSPs: map[string]*msp.MSP{}}, index: txIDIndex{}, used: map[string]bool{},
		st: v2State{version: map[v2Key]*v2Height{}, lifecycle: map[string][]byte{}, hasVP: map[v2Key]bool{}}}
	sources := []string{fmt.Sprintf("config block %d", first.Header.Number)}
	for _, d := range o.MSPDirs {
		dm, err := MembershipFromDir(d)
		if err != nil {
			return err
		}
		v.dirs.merge(dm)
		sources = append(sources, "--msp-dir "+d)
	}
	if v.cfg, err = newV2Config(cfg, chdr.ChannelId, v.dirs); err != nil {
		return fmt.Errorf("block %d: config: %w", first.Header.Number, err)
	}
	if o.Policy != "" {
		env, err := ParsePolicy(o.Policy)
		if err != nil {
			return err
		}
		v.policy = appPolicyOfSignature(env)
	}
	res.Source = strings.Join(sources, " + ") + "; block signatures: /Channel/Orderer/BlockValidation (" + v.cfg.consensus + ")"
	for bi, b := range blocks {
		if (bi > 0 || b.Header.Number > 0) && !o.unsigned[b.Header.Number] {
			if err := v.cfg.verifyBlock(b); err != nil {
				return fmt.Errorf("block %d: %w", b.Header.Number, err)
			}
		}
		rows, err := v.block(b, bi == 0)
		if err != nil {
			return fmt.Errorf("block %d: %w", b.Header.Number, err)
		}
		res.Txs += len(b.Data.Data)
		res.Rows = append(res.Rows, rows...)
	}
	res.Channel = v.cfg.member.Channel
	res.MSPIDs = v.cfg.member.IDs()
	var defined, flagged []string
	for name := range v.used {
		if v.definition(name) != nil {
			defined = append(defined, name)
		} else if name != LifecycleNamespace {
			flagged = append(flagged, name)
		}
	}
	res.Policy = policySources("_lifecycle", defined, v.used[LifecycleNamespace], o.Policy, flagged)
	if len(v.cfg.member.Skipped) > 0 {
		res.Source += "; not read: " + strings.Join(v.cfg.member.Skipped, ", ")
	}
	return nil
}

// appPolicyOfSignature marshals ApplicationPolicy{signature_policy: env}.
func appPolicyOfSignature(env *cb.SignaturePolicyEnvelope) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), protoutil.MarshalOrPanic(env))
}

// definition is the ValidationInfo of a chaincode _lifecycle defines (lifecycle.go's
// namespaces/metadata/<name> of datatype ChaincodeDefinition, namespaces/fields/<name>/ValidationInfo
// holding StateData{Bytes: ChaincodeValidationInfo{validation_plugin=1, validation_parameter=2}}), or nil.
func (v *v2Verifier) definition(name string) []byte {
	meta := v.st.lifecycle["namespaces/metadata/"+name]
	if meta == nil || protoString(meta, 1) != "ChaincodeDefinition" {
		return nil
	}
	vi := protoBytes(v.st.lifecycle["namespaces/fields/"+name+"/ValidationInfo"], 2)
	if vi == nil {
		return nil
	}
	return vi
}

// v2Tx is a parsed transaction and what its checks found.
type v2Tx struct {
	code   pb.TxValidationCode
	why    string
	txid   string
	rw     *txRWSet
	config *cb.Config
}

type txRWSet struct {
	ns []nsRW
}

type nsRW struct {
	name  string
	kv    *kvrwset.KVRWSet
	colls []collRW
}

type collRW struct {
	name string
	h    *kvrwset.HashedRWSet
}

func parseRWSet(raw []byte) (*txRWSet, error) {
	t := &rwset.TxReadWriteSet{}
	if err := proto.Unmarshal(raw, t); err != nil {
		return nil, err
	}
	out := &txRWSet{}
	for _, ns := range t.NsRwset {
		kv := &kvrwset.KVRWSet{}
		if err := proto.Unmarshal(ns.Rwset, kv); err != nil {
			return nil, err
		}
		n := nsRW{name: ns.Namespace, kv: kv}
		for _, c := range ns.CollectionHashedRwset {
			h := &kvrwset.HashedRWSet{}
			if err := proto.Unmarshal(c.HashedRwset, h); err != nil {
				return nil, err
			}
			n.colls = append(n.colls, collRW{name: c.CollectionName, h: h})
		}
		out.ns = append(out.ns, n)
	}
	return out, nil
}

// block checks one block's transactions and replays its valid writes.
func (v *v2Verifier) block(b *cb.Block, first bool) ([]Row, error) {
	recorded := blockfile.Txs(b)
	n := len(b.Data.Data)
	num := b.Header.Number
	txs := make([]*v2Tx, n)
	full := make([]bool, n)
	for i := range b.Data.Data {
		full[i] = first || v.sampled(num, i) || recorded[i].Code != pb.TxValidationCode_VALID
	}
	if first {
		// the genesis block: its CONFIG transaction is VALID (the peer joins with it; no signature is checked)
		for i, raw := range b.Data.Data {
			t := &v2Tx{code: pb.TxValidationCode_VALID}
			if _, _, _, err := configEnvelope(raw); err != nil {
				t.code, t.why = pb.TxValidationCode_INVALID_CONFIG_TRANSACTION, err.Error()
			}
			txs[i] = t
		}
	} else {
		workers := v.o.Workers
		if workers <= 0 {
			workers = 1
		}
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					txs[i] = v.validateTx(b.Data.Data[i], num, full[i])
				}
			}()
		}
		for i := range b.Data.Data {
			next <- i
		}
		close(next)
		wg.Wait()
		// validator.go:248,279 markTXIdDuplicates: a later transaction with an earlier one's ID in the block
		seen := map[string]bool{}
		for _, t := range txs {
			if t.txid == "" || t.code != pb.TxValidationCode_VALID {
				continue
			}
			if seen[t.txid] {
				t.code, t.why = pb.TxValidationCode_DUPLICATE_TXID, "duplicate txid "+t.txid+" within the block"
				continue
			}
			seen[t.txid] = true
		}
	}
	// MVCC and the replay, in block order (kvledger/txmgmt/validation/validator.go:81).
	updated := map[v2Key]bool{}
	var newCfg *cb.Config
	for i, t := range txs {
		if t.code == pb.TxValidationCode_VALID && t.rw != nil {
			if code, why := v.mvcc(t.rw, updated); code != pb.TxValidationCode_VALID {
				if !full[i] {
					// an unsampled transaction the ledger says VALID: check it fully after all
					full[i] = true
					t2 := v.validateTx(b.Data.Data[i], num, true)
					if t2.code != pb.TxValidationCode_VALID {
						t.code, t.why = t2.code, t2.why
						continue
					}
				}
				t.code, t.why = code, why
				continue
			}
			v.apply(t.rw, v2Height{num, uint64(i)}, updated)
		}
		if t.code == pb.TxValidationCode_VALID && t.config != nil {
			newCfg = t.config
		}
	}
	for _, r := range recorded {
		if r.TxID != "" {
			v.index[r.TxID] = struct{}{}
		}
	}
	if newCfg != nil {
		c, err := newV2Config(newCfg, v.cfg.member.Channel, v.dirs)
		if err == nil {
			v.cfg = c
		}
	}
	var rows []Row
	for i, t := range txs {
		if !full[i] {
			continue
		}
		rows = append(rows, Row{Block: num, Index: i, TxID: recorded[i].TxID, Recorded: recorded[i].Code, Derived: t.code, Reason: t.why})
	}
	return rows, nil
}

func (v *v2Verifier) sampled(block uint64, i int) bool {
	frac := v.o.Sample
	if frac <= 0 || frac >= 1 {
		return true
	}
	x := splitmix64(v.o.Seed ^ splitmix64(block<<24^uint64(i)))
	return float64(x>>11)/float64(uint64(1)<<53) < frac
}

func bad(code pb.TxValidationCode, format string, args ...any) *v2Tx {
	return &v2Tx{code: code, why: fmt.Sprintf(format, args...)}
}

// validateTx is validator.go:297 validateTx up to the dispatcher; crypto
// false skips the signature checks and the policies (an unsampled
// transaction the ledger says VALID).
func (v *v2Verifier) validateTx(raw []byte, num uint64, crypto bool) *v2Tx {
	if len(raw) == 0 {
		return bad(pb.TxValidationCode_NIL_ENVELOPE, "nil envelope")
	}
	env := &cb.Envelope{}
	if err := proto.Unmarshal(raw, env); err != nil {
		return bad(pb.TxValidationCode_INVALID_OTHER_REASON, "envelope: %v", err)
	}
	// msgvalidation.go:248 ValidateTransaction
	payload := &cb.Payload{}
	if err := proto.Unmarshal(env.Payload, payload); err != nil {
		return bad(pb.TxValidationCode_BAD_PAYLOAD, "payload: %v", err)
	}
	if payload.Header == nil {
		return bad(pb.TxValidationCode_BAD_COMMON_HEADER, "nil header")
	}
	chdr, shdr := &cb.ChannelHeader{}, &cb.SignatureHeader{}
	if proto.Unmarshal(payload.Header.ChannelHeader, chdr) != nil || proto.Unmarshal(payload.Header.SignatureHeader, shdr) != nil {
		return bad(pb.TxValidationCode_BAD_COMMON_HEADER, "bad channel or signature header")
	}
	// msgvalidation.go validateCommonHeader: known type, epoch 0, nonce and creator present
	switch cb.HeaderType(chdr.Type) {
	case cb.HeaderType_ENDORSER_TRANSACTION, cb.HeaderType_CONFIG:
	default:
		return bad(pb.TxValidationCode_UNSUPPORTED_TX_PAYLOAD, "header type %d", chdr.Type)
	}
	if chdr.Epoch != 0 || len(shdr.Nonce) == 0 || len(shdr.Creator) == 0 {
		return bad(pb.TxValidationCode_BAD_COMMON_HEADER, "epoch, nonce or creator")
	}
	// msgvalidation.go:274-277 checkSignatureFromCreator (done for every sampled transaction; an unsampled
	// one is as recorded)
	if crypto {
		creator, err := v.cfg.mgr.DeserializeIdentity(shdr.Creator)
		if err != nil {
			return bad(pb.TxValidationCode_BAD_CREATOR_SIGNATURE, "creator: %v", err)
		}
		if err := creator.Verify(env.Payload, env.Signature); err != nil {
			return bad(pb.TxValidationCode_BAD_CREATOR_SIGNATURE, "creator signature: %v", err)
		}
	}
	t := &v2Tx{code: pb.TxValidationCode_VALID}
	if cb.HeaderType(chdr.Type) == cb.HeaderType_CONFIG {
		if chdr.ChannelId != v.cfg.member.Channel {
			return bad(pb.TxValidationCode_TARGET_CHAIN_NOT_FOUND, "channel %q", chdr.ChannelId)
		}
		_, _, cfg, err := configEnvelope(raw)
		if err != nil {
			return bad(pb.TxValidationCode_INVALID_CONFIG_TRANSACTION, "%v", err)
		}
		t.config = cfg
		return t
	}
	// msgvalidation.go:288-295 CheckTxID
	if protoutil.ComputeTxID(shdr.Nonce, shdr.Creator) != chdr.TxId {
		return bad(pb.TxValidationCode_BAD_PROPOSAL_TXID, "txid is not the hash of nonce and creator")
	}
	tx := &pb.Transaction{}
	if err := proto.Unmarshal(payload.Data, tx); err != nil || len(tx.Actions) != 1 || tx.Actions[0] == nil {
		return bad(pb.TxValidationCode_BAD_PAYLOAD, "transaction: one action required")
	}
	cap2 := &pb.ChaincodeActionPayload{}
	if err := proto.Unmarshal(tx.Actions[0].Payload, cap2); err != nil || cap2.Action == nil {
		return bad(pb.TxValidationCode_BAD_PAYLOAD, "chaincode action payload")
	}
	prp := &pb.ProposalResponsePayload{}
	if err := proto.Unmarshal(cap2.Action.ProposalResponsePayload, prp); err != nil {
		return bad(pb.TxValidationCode_BAD_RESPONSE_PAYLOAD, "proposal response payload: %v", err)
	}
	act := &pb.ChaincodeAction{}
	if err := proto.Unmarshal(prp.Extension, act); err != nil {
		return bad(pb.TxValidationCode_BAD_RESPONSE_PAYLOAD, "chaincode action: %v", err)
	}
	// validator.go:355 the channel
	if chdr.ChannelId != v.cfg.member.Channel {
		return bad(pb.TxValidationCode_TARGET_CHAIN_NOT_FOUND, "channel %q is not %q", chdr.ChannelId, v.cfg.member.Channel)
	}
	// validator.go:365,460 checkTxIdDupsLedger
	if _, dup := v.index[chdr.TxId]; dup {
		return bad(pb.TxValidationCode_DUPLICATE_TXID, "txid %s is in an earlier block", chdr.TxId)
	}
	rw, err := parseRWSet(act.Results)
	if err != nil {
		return bad(pb.TxValidationCode_BAD_RWSET, "rwset: %v", err)
	}
	t.txid, t.rw = chdr.TxId, rw
	// dispatcher.go:112-157: the invoked chaincode
	ext := &pb.ChaincodeHeaderExtension{}
	if err := proto.Unmarshal(chdr.Extension, ext); err != nil {
		return bad(pb.TxValidationCode_BAD_HEADER_EXTENSION, "header extension: %v", err)
	}
	if ext.ChaincodeId == nil || act.ChaincodeId == nil || ext.ChaincodeId.Name == "" || ext.ChaincodeId.Name != act.ChaincodeId.Name || act.ChaincodeId.Version == "" {
		return bad(codeInvalidChaincode, "chaincode ID of the header and the action")
	}
	if !crypto {
		return t
	}
	// dispatcher.go:159-184: the invoked namespace and each written one; duplicate namespaces
	wr := map[string]bool{ext.ChaincodeId.Name: true}
	seenNS := map[string]bool{}
	for _, ns := range rw.ns {
		if seenNS[ns.name] {
			return bad(pb.TxValidationCode_ILLEGAL_WRITESET, "duplicate namespace %q", ns.name)
		}
		seenNS[ns.name] = true
		if writes(ns) {
			wr[ns.name] = true
		}
	}
	// validator_keylevel.go:247-261: the endorsements' signed data
	set := make([]policy.SignedData, 0, len(cap2.Action.Endorsements))
	for _, e := range cap2.Action.Endorsements {
		set = append(set, policy.SignedData{Identity: e.Endorser, Data: concat(cap2.Action.ProposalResponsePayload, e.Endorser), Signature: e.Signature})
	}
	ids := v.cfg.validIdentities(set)
	names := make([]string, 0, len(wr))
	for ns := range wr {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		if code, why := v.endorsed(ns, rw, ids, num); code != pb.TxValidationCode_VALID {
			t.code, t.why = code, why
			return t
		}
	}
	return t
}

func writes(ns nsRW) bool {
	if len(ns.kv.Writes) > 0 || len(ns.kv.MetadataWrites) > 0 {
		return true
	}
	for _, c := range ns.colls {
		if len(c.h.HashedWrites) > 0 || len(c.h.MetadataWrites) > 0 {
			return true
		}
	}
	return false
}

// endorsed is the v20 validation plugin for one namespace: its policy
// (ValidationInfo) and the state-based evaluation of its writes.
func (v *v2Verifier) endorsed(ns string, rw *txRWSet, ids []*msp.Identity, num uint64) (pb.TxValidationCode, string) {
	var ccEP []byte
	switch {
	case ns == LifecycleNamespace:
		// deployedcc_infoprovider.go:330-337, lifecycle.go:274-281
		ccEP = protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "/Channel/Application/LifecycleEndorsement")
		if v.cfg.policies["/Channel/Application/LifecycleEndorsement"] == nil {
			return pb.TxValidationCode_INVALID_OTHER_REASON, "the channel has no LifecycleEndorsement policy (the default of upgraded channels is not modelled)"
		}
	default:
		vi := v.definition(ns)
		if vi != nil {
			if plugin := protoString(vi, 1); plugin != "vscc" {
				return pb.TxValidationCode_INVALID_OTHER_REASON, fmt.Sprintf("validation plugin %q of %s is not the builtin vscc", plugin, ns)
			}
			ccEP = protoBytes(vi, 2)
		} else if v.policy != nil {
			ccEP = v.policy
		} else {
			return codeInvalidChaincode, "no _lifecycle definition of " + ns + " in the ledger (give --policy)"
		}
	}
	v.markUsed(ns)
	checked := map[string]bool{} // v20.go nsEPChecked: "" for the chaincode's policy, else a collection
	some := false
	cc := func() (pb.TxValidationCode, string) {
		if checked[""] {
			return pb.TxValidationCode_VALID, ""
		}
		if err := v.cfg.evalApplicationPolicy(ccEP, ids); err != nil {
			return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, fmt.Sprintf("validation of endorsement policy for chaincode %s in tx failed: %v", ns, err)
		}
		checked[""], some = true, true
		return pb.TxValidationCode_VALID, ""
	}
	for _, n := range rw.ns {
		if n.name != ns {
			continue
		}
		for _, w := range n.kv.Writes {
			if v.st.hasVP[v2Key{ns, "", w.Key}] {
				return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, "key-level endorsement is not modelled"
			}
			if code, why := cc(); code != pb.TxValidationCode_VALID {
				return code, why
			}
		}
		if len(n.kv.MetadataWrites) > 0 {
			return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, "metadata writes (key-level endorsement) are not modelled"
		}
		for _, c := range n.colls {
			if len(c.h.MetadataWrites) > 0 {
				return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, "metadata writes (key-level endorsement) are not modelled"
			}
			if len(c.h.HashedWrites) == 0 || checked[c.name] {
				continue
			}
			// v20.go:105-129 CheckCCEPIfNotChecked: the collection's policy (deployedcc_infoprovider.go:342)
			if mspID, ok := strings.CutPrefix(c.name, implicitPrefix); ok {
				org := ""
				for name, id := range v.cfg.orgMSP {
					if id == mspID {
						org = name
					}
				}
				if org == "" {
					return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, "no org found in channel with MSPID " + mspID
				}
				ref := "/Channel/Application/" + org + "/Endorsement"
				var err error
				if v.cfg.policies[ref] != nil {
					err = v.cfg.evalRef(ref, ids)
				} else {
					err = evalSignaturePolicy(anyMemberOf(mspID), ids)
				}
				if err != nil {
					return pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, fmt.Sprintf("validation of endorsement policy for collection %s chaincode %s failed: %v", c.name, ns, err)
				}
				checked[c.name], some = true, true
				continue
			}
			// a static collection: its own policy is not modelled; the chaincode's holds for it
			if code, why := cc(); code != pb.TxValidationCode_VALID {
				return code, why
			}
		}
	}
	// validator_keylevel.go:142 CheckCCEPIfNoEPChecked (FAB-9473)
	if !some {
		return cc()
	}
	return pb.TxValidationCode_VALID, ""
}

var usedMu sync.Mutex

func (v *v2Verifier) markUsed(ns string) {
	usedMu.Lock()
	v.used[ns] = true
	usedMu.Unlock()
}

func anyMemberOf(mspID string) *cb.SignaturePolicyEnvelope {
	env, _ := ParsePolicy("OR('" + mspID + ".member')")
	return env
}

// mvcc is kvledger/txmgmt/validation/validator.go:135 validateTx.
func (v *v2Verifier) mvcc(rw *txRWSet, updated map[v2Key]bool) (pb.TxValidationCode, string) {
	for _, ns := range rw.ns {
		// validator.go:180-217 validateKVRead
		for _, r := range ns.kv.Reads {
			k := v2Key{ns.name, "", r.Key}
			if updated[k] {
				return pb.TxValidationCode_MVCC_READ_CONFLICT, fmt.Sprintf("%s/%s: written by an earlier transaction of the block", ns.name, r.Key)
			}
			if !sameVersion(v.st.version[k], r.Version) {
				return pb.TxValidationCode_MVCC_READ_CONFLICT, fmt.Sprintf("%s/%s: read version %v, committed %v", ns.name, r.Key, r.Version, v.st.version[k])
			}
		}
		if len(ns.kv.RangeQueriesInfo) > 0 {
			// validator.go:219 validateRangeQuery: not modelled
			return pb.TxValidationCode_PHANTOM_READ_CONFLICT, "range queries are not modelled"
		}
		// validator.go:254-291 validateCollHashedReadSet, validateKVReadHash
		for _, c := range ns.colls {
			for _, r := range c.h.HashedReads {
				k := v2Key{ns.name, c.name, string(r.KeyHash)}
				if updated[k] {
					return pb.TxValidationCode_MVCC_READ_CONFLICT, fmt.Sprintf("%s/%s: a hashed key written by an earlier transaction of the block", ns.name, c.name)
				}
				if !sameVersion(v.st.version[k], r.Version) {
					return pb.TxValidationCode_MVCC_READ_CONFLICT, fmt.Sprintf("%s/%s: a hashed read's version is not the committed one", ns.name, c.name)
				}
			}
		}
	}
	return pb.TxValidationCode_VALID, ""
}

func sameVersion(h *v2Height, r *kvrwset.Version) bool {
	if h == nil || r == nil {
		return h == nil && r == nil
	}
	return h.block == r.BlockNum && h.tx == r.TxNum
}

// apply is a valid transaction's writes at height h (kvledger's
// publicAndHashUpdates: public writes, hashed writes, metadata).
func (v *v2Verifier) apply(rw *txRWSet, h v2Height, updated map[v2Key]bool) {
	for _, ns := range rw.ns {
		for _, w := range ns.kv.Writes {
			k := v2Key{ns.name, "", w.Key}
			updated[k] = true
			if w.IsDelete {
				v.st.version[k] = nil
				if ns.name == LifecycleNamespace {
					delete(v.st.lifecycle, w.Key)
				}
				continue
			}
			hh := h
			v.st.version[k] = &hh
			if ns.name == LifecycleNamespace {
				v.st.lifecycle[w.Key] = append([]byte(nil), w.Value...)
			}
		}
		for _, m := range ns.kv.MetadataWrites {
			k := v2Key{ns.name, "", m.Key}
			for _, e := range m.Entries {
				if e.Name == "VALIDATION_PARAMETER" {
					v.st.hasVP[k] = len(e.Value) > 0
				}
			}
		}
		for _, c := range ns.colls {
			for _, w := range c.h.HashedWrites {
				k := v2Key{ns.name, c.name, string(w.KeyHash)}
				updated[k] = true
				if w.IsDelete {
					v.st.version[k] = nil
					continue
				}
				hh := h
				v.st.version[k] = &hh
			}
		}
	}
}

// protoBytes is the last bytes field num of a message (nil if absent).
func protoBytes(msg []byte, num protowire.Number) []byte {
	all := protoBytesAll(msg, num)
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}

func protoString(msg []byte, num protowire.Number) string { return string(protoBytes(msg, num)) }

// protoBytesAll is every occurrence of the length-delimited field num.
func protoBytesAll(msg []byte, num protowire.Number) [][]byte {
	var out [][]byte
	for _, v := range protoFields(msg, num, protowire.BytesType) {
		b, _ := protowire.ConsumeBytes(v) // protoFields has checked its length
		out = append(out, b)
	}
	return out
}

// protoVarint is the last occurrence of the varint field num, as proto
// decoding keeps the last; 0 when there is none.
func protoVarint(msg []byte, num protowire.Number) uint64 {
	vs := protoFields(msg, num, protowire.VarintType)
	if len(vs) == 0 {
		return 0
	}
	v, _ := protowire.ConsumeVarint(vs[len(vs)-1])
	return v
}

// protoFields is the encoded value of every occurrence of field num with
// wire type typ, in order, up to the first malformed field.
func protoFields(msg []byte, num protowire.Number, typ protowire.Type) [][]byte {
	var out [][]byte
	for len(msg) > 0 {
		n, t, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return out
		}
		msg = msg[l:]
		l = protowire.ConsumeFieldValue(n, t, msg)
		if l < 0 {
			return out
		}
		if n == num && t == typ {
			out = append(out, msg[:l])
		}
		msg = msg[l:]
	}
	return out
}

// parseCertPEM is a PEM certificate's DER bytes.
func parseCertPEM(pemBytes []byte) ([]byte, error) {
	c, err := fcrypto.ParseCertificatePEM(pemBytes)
	if err != nil {
		return nil, err
	}
	return c.Raw, nil
}
