// Package txverify re-derives each transaction's validation code from the
// bytes of a Fabric 1.x ledger's blocks, with this repository's own model of
// Fabric 1.2's committer (internal/validation, internal/msp, internal/policy;
// no upstream code), and sets it beside the code the ledger recorded in the
// block's TRANSACTIONS_FILTER. cmd/txverify is its command.
//
// A ledger whose config block carries a V2_0 or later capability (Fabric
// v2.x, v3.x) is checked with the v2 rules instead (Options.Rules; v2.go
// says what they check, with the upstream file and line of each rule); what
// follows is the v1 rules, Fabric 1.2's.
//
// Per endorser transaction, as Fabric 1.2's committer does, in its order:
// the envelope's layers and header fields, the creator's certificate (it
// must chain to a root or intermediate CA of its MSP) and signature over the
// payload, the transaction ID (hash of nonce and creator), the channel, a
// duplicate ID against every earlier block, then VSCC (every endorsement's
// signature, the endorsement policy of each chaincode the transaction
// writes, the chaincode's version against its definition), duplicate IDs
// within the block, and MVCC against the state the verifier replays from
// the ledger itself: a key's version is the (block, transaction) of the
// last valid write to it; a read of another version, or of a key an earlier
// valid transaction of the same block wrote, is MVCC_READ_CONFLICT.
//
// Where things come from:
//
//   - MSPs: the ledger's first block when it is a config block (block 0 is the
//     channel's genesis block in every Fabric ledger and in the reference
//     build's; a later CONFIG transaction that is valid replaces them), plus
//     Options.MSPDirs (MembershipFromDir), which win for the same MSP ID. No
//     MSP at all is an error.
//   - Endorsement policies: the chaincode definitions (lscc entries) the
//     ledger's own transactions write; a chaincode the ledger never defines
//     (the reference committer benchmark writes its definition straight into
//     the state database, FastFabric's benchmarks into theirs) gets
//     Options.Policy, by default one member of any application organization
//     of the channel (DefaultPolicyOf), and the version its first transaction
//     names.
//   - Where the files start at a block N above 0, their IDs before N are
//     unknown (no duplicate found against them), and a key read at a version
//     below block N that no block of the files wrote before is taken as
//     written there (the highest such version read).
//   - State before the first block: empty, except (Options.Prestate "auto")
//     a key that some transaction reads at version 0:0: block 0 is a config
//     block, which writes no chaincode state, so only a pre-load outside the
//     ledger gives that version (the reference committer benchmark pre-loads
//     its accounts at 0:0); such a key starts at 0:0. "empty" turns that off.
//
// Conventions of the recorded codes this follows: the genesis block's CONFIG
// transaction is VALID without a signature check (a peer joins the channel
// with it, Fabric's cscc sets VALID); a later CONFIG transaction is VALID once
// its creator's signature verifies (Fabric 1.2's ValidateTransaction; the
// configuration update's own policies are not evaluated here).
//
// Sampling (Options.Sample below 1): signatures are verified for a
// deterministic pseudo-random share of the transactions (seeded, chosen by
// block number and index), every transaction the ledger recorded as not
// VALID, every config transaction, and every transaction whose checks
// without cryptography (structure, transaction ID, duplicates, MVCC)
// already disagree with a recorded VALID; the others are assumed to be as
// recorded (VALID) for the replay, so versions stay right, and are not
// reported.
//
// Not checked: block signatures (the orderer's; unsigned in the upstream
// peer benchmark), MSP organizational-unit identifiers, revocation lists and
// the ADMIN role (internal/msp and internal/policy do not model them), range
// queries (internal/validation's MVCC marks any PHANTOM_READ_CONFLICT),
// private data, chaincode upgrades within a block, and channel
// capabilities (duplicate IDs within a block are always refused, as
// Fabric 1.2's V1_1+ application capability does).
package txverify

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/blockfile"
	"fabricrepro/internal/ledger/statedb"
	"fabricrepro/internal/lscc"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
	"fabricrepro/internal/validation"
)

// Options configure Verify.
type Options struct {
	// Policy is the endorsement policy (Fabric's language, ParsePolicy) of a
	// chaincode the ledger holds no definition of; "" is DefaultPolicyOf the
	// channel's application organizations.
	Policy string
	// MSPDirs are MembershipFromDir arguments.
	MSPDirs []string
	// Sample is the share of transactions whose signatures are verified
	// (0 or 1 and above: all).
	Sample float64
	// Seed seeds the sample.
	Seed uint64
	// Prestate is "auto" (default, "") or "empty": see the package comment.
	Prestate string
	// Workers validates a block's transactions with this many goroutines
	// (0: GOMAXPROCS).
	Workers int
	// Rules is the committer modelled: "v1" (Fabric 1.2, this file), "v2"
	// (Fabric v2.x/v3.x, v2.go), or "auto"/"" (RulesOf the first block: v2
	// where the channel's configuration carries a V2_0 or later capability).
	Rules string
	// unsigned names blocks whose orderer signatures the v2 rules do not
	// check (tests that rebuild a block cannot sign it as its orderers did).
	unsigned map[uint64]bool
}

// Row is one checked transaction.
type Row struct {
	Block    uint64
	Index    int
	TxID     string
	Recorded pb.TxValidationCode
	Derived  pb.TxValidationCode
	// Reason says why the derived code is not VALID, where the check says.
	Reason string
}

// Agrees reports whether the derived code equals the recorded one.
func (r Row) Agrees() bool { return r.Recorded == r.Derived }

// CodeName is a TxValidationCode's enum name, or its number.
func CodeName(c pb.TxValidationCode) string {
	if n, ok := pb.TxValidationCode_name[int32(c)]; ok {
		return n
	}
	switch c {
	case codeInvalidWriteset:
		return "INVALID_WRITESET"
	case codeInvalidChaincode:
		return "INVALID_CHAINCODE"
	}
	return fmt.Sprint(int32(c))
}

// Result is what Verify found.
type Result struct {
	Rows     []Row // the checked transactions, in ledger order
	Txs      int   // every transaction of the ledger
	Checked  int
	Agree    int
	Disagree int
	Channel  string
	// Source says where the MSPs came from; Policy where the endorsement
	// policies did; Prestate how many keys were taken as pre-loaded.
	Source   string
	MSPIDs   []string
	Policy   string
	Prestate int
	// Rules is the committer's rule set used: "v1" or "v2".
	Rules string
}

// tally counts the rows that agree with the ledger's flags and those that do not.
func (res *Result) tally() {
	for _, r := range res.Rows {
		if r.Agrees() {
			res.Agree++
		} else {
			res.Disagree++
		}
	}
	res.Checked = len(res.Rows)
}

type verifier struct {
	o          Options
	member     *Membership
	dirs       *Membership // from Options.MSPDirs, kept over a config update
	mgr        *msp.Manager
	tv         *validation.TxValidator
	mvcc       *validation.MVCC
	state      *replayState
	index      txIDIndex
	policyEnv  *cb.SignaturePolicyEnvelope
	mu         sync.Mutex
	viewIndex  []int          // view position -> index in the block, for the validator's log lines
	reasons    map[int]string // index in the block -> why
	sampleFrac float64
}

// Verify re-derives the validation code of the transactions of blocks (one
// ledger, in order; the chain is the caller's to check, blockfile.Check).
func Verify(blocks []*cb.Block, o Options) (*Result, error) {
	if len(blocks) == 0 {
		return nil, errors.New("no block")
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Prestate == "" {
		o.Prestate = "auto"
	}
	if o.Prestate != "auto" && o.Prestate != "empty" {
		return nil, fmt.Errorf("prestate %q is neither auto nor empty", o.Prestate)
	}
	if o.Policy != "" {
		if _, err := ParsePolicy(o.Policy); err != nil {
			return nil, err
		}
	}
	rules := o.Rules
	if rules == "" || rules == "auto" {
		rules = RulesOf(blocks[0])
	}
	switch rules {
	case "v2":
		res := &Result{Rules: "v2"}
		if err := verifyV2(blocks, o, res); err != nil {
			return nil, err
		}
		res.tally()
		return res, nil
	case "v1":
	default:
		return nil, fmt.Errorf("rules %q are neither v1, v2 nor auto", o.Rules)
	}
	v := &verifier{o: o, state: newReplayState(), index: txIDIndex{}, sampleFrac: o.Sample}
	if v.sampleFrac <= 0 || v.sampleFrac > 1 {
		v.sampleFrac = 1
	}
	res := &Result{Rules: "v1"}

	// Membership: the first block's configuration, then the directories.
	var sources []string
	first := blocks[0]
	genesis := isConfigBlock(first)
	m := &Membership{MSPs: map[string]*msp.MSP{}}
	if genesis {
		cm, err := MembershipFromConfigBlock(first)
		if err != nil && len(o.MSPDirs) == 0 {
			return nil, fmt.Errorf("block %d: config: %w", first.Header.Number, err)
		}
		if err == nil {
			m.merge(cm)
			sources = append(sources, fmt.Sprintf("config block %d", first.Header.Number))
		}
	}
	v.dirs = &Membership{MSPs: map[string]*msp.MSP{}}
	for _, d := range o.MSPDirs {
		dm, err := MembershipFromDir(d)
		if err != nil {
			return nil, err
		}
		v.dirs.merge(dm)
		sources = append(sources, "--msp-dir "+d)
	}
	m.merge(v.dirs)
	if len(m.MSPs) == 0 {
		return nil, errors.New("no MSP: the ledger's first block is not a config block; give --msp-dir")
	}
	if m.Channel == "" {
		m.Channel = firstChannel(blocks)
	}
	v.member = m
	v.newValidator()
	res.Source = strings.Join(sources, " + ")
	if first.Header.Number != 0 {
		res.Source += fmt.Sprintf("; the files start at block %d: IDs of earlier blocks unknown, versions read below it taken as pre-loaded", first.Header.Number)
	}

	polText := o.Policy
	if polText == "" {
		polText = DefaultPolicyOf(v.member.Application)
	}
	env, err := ParsePolicy(polText)
	if err != nil {
		return nil, err
	}
	v.policyEnv = env
	res.Policy, res.Prestate = v.prestate(blocks, polText)
	for bi, b := range blocks {
		rows, err := v.block(b, bi == 0 && genesis)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", b.Header.Number, err)
		}
		res.Txs += len(b.Data.Data)
		res.Rows = append(res.Rows, rows...)
	}
	res.tally()
	res.Channel = v.member.Channel
	res.MSPIDs = v.member.IDs()
	if len(v.member.Skipped) > 0 {
		res.Source += "; not read: " + strings.Join(v.member.Skipped, ", ")
	}
	return res, nil
}

func isConfigBlock(b *cb.Block) bool {
	if b.Data == nil || len(b.Data.Data) != 1 {
		return false
	}
	chdr, _, _ := headers(b.Data.Data[0])
	return chdr != nil && chdr.Type == int32(cb.HeaderType_CONFIG)
}

// headers unmarshals an envelope's channel and signature headers (nil where
// they do not decode).
func headers(raw []byte) (*cb.ChannelHeader, *cb.SignatureHeader, *cb.Payload) {
	env := &cb.Envelope{}
	if proto.Unmarshal(raw, env) != nil {
		return nil, nil, nil
	}
	payload, chdr, shdr, err := protoutil.UnmarshalPayload(env)
	if err != nil {
		return nil, nil, nil
	}
	return chdr, shdr, payload
}

// firstChannel is the channel of the first transaction that names one.
func firstChannel(blocks []*cb.Block) string {
	for _, b := range blocks {
		for _, raw := range b.Data.Data {
			if chdr, _, _ := headers(raw); chdr != nil && chdr.ChannelId != "" {
				return chdr.ChannelId
			}
		}
	}
	return ""
}

func (v *verifier) newValidator() {
	v.mgr = v.member.Manager()
	v.tv = validation.NewTxValidator(validation.Config{ChannelID: v.member.Channel, MSPs: v.mgr,
		ApplicationMSPs: v.member.Application, State: v.state, Ledger: v.index, Workers: v.o.Workers, Logf: v.logf})
	v.mvcc = &validation.MVCC{DB: v.state}
}

// logf takes the validator's reasons ("Invalid transaction in block [n]
// index [i] with code C: err") back to the transaction's index in its block.
func (v *verifier) logf(format string, args ...any) {
	if !strings.HasPrefix(format, "Invalid transaction in block") || len(args) != 4 {
		return
	}
	i, ok := args[1].(int)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if i >= 0 && i < len(v.viewIndex) {
		v.reasons[v.viewIndex[i]] = fmt.Sprint(args[3])
	}
}

// prestate scans the ledger once, before the replay: the keys read at 0:0
// (Prestate auto), and the chaincodes the ledger uses but never defines,
// which get the policy polText. It returns where the policies come from and
// how many keys were pre-loaded.
func (v *verifier) prestate(blocks []*cb.Block, polText string) (string, int) {
	defined := map[string]bool{}
	version := map[string]string{}
	var used []string
	// Versions below the first block (0:0 where the files start at block 0,
	// whose config transaction writes no chaincode state) were written
	// outside these files.
	below := blocks[0].Header.Number
	if below == 0 {
		below = 1
	}
	early := map[nsKey]statedb.Height{}
	for _, b := range blocks {
		for _, raw := range b.Data.Data {
			t, err := validation.ParseEndorserTx(raw)
			if err != nil || t == nil || t.Action == nil {
				continue
			}
			if id := t.Action.ChaincodeId; id != nil && id.Name != lscc.Namespace {
				if _, ok := version[id.Name]; !ok {
					version[id.Name] = id.Version
					used = append(used, id.Name)
				}
			}
			for _, ns := range t.RWSets {
				for _, r := range ns.KV.Reads {
					if r.Version == nil || r.Version.BlockNum >= below {
						continue
					}
					h, k := statedb.Height{BlockNum: r.Version.BlockNum, TxNum: r.Version.TxNum}, nsKey{ns.Namespace, r.Key}
					if old, ok := early[k]; !ok || old.Compare(h) < 0 {
						early[k] = h
					}
				}
				for _, w := range ns.KV.Writes {
					if ns.Namespace == lscc.Namespace {
						defined[w.Key] = true
					} else if _, ok := version[ns.Namespace]; !ok {
						version[ns.Namespace] = ""
						used = append(used, ns.Namespace)
					}
				}
			}
		}
	}
	if v.o.Prestate == "auto" {
		for k, h := range early {
			v.state.pre[k] = &statedb.VersionedValue{Version: h}
		}
	}
	var fromFlag, fromLedger []string
	for name := range defined {
		fromLedger = append(fromLedger, name)
	}
	for _, name := range used {
		if defined[name] {
			continue
		}
		cd := &lscc.ChaincodeData{Name: name, Version: version[name], Escc: "escc", Vscc: "vscc", Policy: protoutil.MarshalOrPanic(v.policyEnv)}
		v.state.pre[nsKey{lscc.Namespace, name}] = &statedb.VersionedValue{Value: cd.Marshal()}
		fromFlag = append(fromFlag, name)
	}
	n := 0
	if v.o.Prestate == "auto" {
		n = len(early)
	}
	return policySources("lscc", fromLedger, false, polText, fromFlag), n
}

// policySources says where the endorsement policies came from: the ledger's
// definitions in store (lscc or _lifecycle), the channel's
// LifecycleEndorsement where _lifecycle was used, and polText for the
// chaincodes the ledger does not define.
func policySources(store string, defined []string, lifecycle bool, polText string, undefined []string) string {
	sort.Strings(defined)
	sort.Strings(undefined)
	var parts []string
	if len(defined) > 0 {
		parts = append(parts, "the ledger's "+store+" definitions ("+strings.Join(defined, ", ")+")")
	}
	if lifecycle {
		parts = append(parts, "/Channel/Application/LifecycleEndorsement for _lifecycle")
	}
	if len(undefined) > 0 {
		parts = append(parts, polText+" for "+strings.Join(undefined, ", ")+" (no definition in the ledger)")
	}
	if len(parts) == 0 {
		return "none used"
	}
	return strings.Join(parts, "; ")
}

// sampled is the deterministic sample: splitmix64 of seed, block and index.
func (v *verifier) sampled(block uint64, i int) bool {
	if v.sampleFrac >= 1 {
		return true
	}
	x := splitmix64(v.o.Seed ^ splitmix64(block<<24^uint64(i)))
	return float64(x>>11)/float64(uint64(1)<<53) < v.sampleFrac
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// block verifies one block and replays its valid writes.
func (v *verifier) block(b *cb.Block, genesis bool) ([]Row, error) {
	recorded := blockfile.Txs(b)
	n := len(b.Data.Data)
	num := b.Header.Number
	derived := validation.NewTxFilter(n)
	checked := make([]bool, n)
	v.reasons = map[int]string{}
	var newMember *Membership

	if genesis {
		for i, raw := range b.Data.Data {
			checked[i] = true
			if _, _, _, err := configEnvelope(raw); err != nil {
				derived.Set(i, pb.TxValidationCode_INVALID_CONFIG_TRANSACTION)
				v.reasons[i] = err.Error()
			} else {
				derived.Set(i, pb.TxValidationCode_VALID)
			}
		}
	} else {
		var full []int
		txIDs := make([]string, n)
		for i, raw := range b.Data.Data {
			chdr, _, _ := headers(raw)
			if chdr != nil && chdr.Type == int32(cb.HeaderType_CONFIG) {
				checked[i] = true
				code, m, why := v.configTx(raw)
				derived.Set(i, code)
				if why != "" {
					v.reasons[i] = why
				}
				if code == pb.TxValidationCode_VALID && m != nil {
					newMember = m
				}
				continue
			}
			if chdr != nil && chdr.Type == int32(cb.HeaderType_ENDORSER_TRANSACTION) {
				txIDs[i] = chdr.TxId
			}
			if v.sampled(num, i) || recorded[i].Code != pb.TxValidationCode_VALID || !v.cheap(raw) {
				full = append(full, i)
				checked[i] = true
				continue
			}
			derived.Set(i, pb.TxValidationCode_VALID) // as recorded; its signatures are not verified
		}
		if err := v.validate(b, full, derived, false); err != nil {
			return nil, err
		}
		// Duplicate IDs within the block: a later valid transaction with the
		// ID of an earlier valid one (Fabric's markTXIdDuplicates).
		seen := map[string]bool{}
		for i, id := range txIDs {
			if id == "" || !derived.IsValid(i) {
				continue
			}
			if seen[id] {
				derived.Set(i, pb.TxValidationCode_DUPLICATE_TXID)
				v.reasons[i] = "duplicate txid " + id + " within the block"
				continue
			}
			seen[id] = true
		}
		batch, err := v.mvcc.ValidateAndPrepare(b, derived)
		if err != nil {
			return nil, err
		}
		// An unsampled transaction the checks without cryptography refuse
		// while the ledger says VALID: verify it fully after all.
		var late []int
		for i := range derived {
			if !checked[i] && !derived.IsValid(i) {
				late = append(late, i)
				checked[i] = true
			}
		}
		if err := v.validate(b, late, derived, true); err != nil {
			return nil, err
		}
		if err := v.state.ApplyUpdates(batch, statedb.Height{BlockNum: num, TxNum: uint64(n)}); err != nil {
			return nil, err
		}
	}
	for _, t := range recorded {
		if t.TxID != "" {
			v.index[t.TxID] = struct{}{}
		}
	}
	if newMember != nil {
		newMember.merge(v.dirs)
		v.member = newMember
		v.newValidator()
	}
	var rows []Row
	for i, t := range recorded {
		if !checked[i] {
			continue
		}
		r := Row{Block: num, Index: i, TxID: t.TxID, Recorded: t.Code, Derived: derived.Code(i)}
		if r.Derived != pb.TxValidationCode_VALID {
			r.Reason = v.reasons[i]
			if r.Reason == "" && r.Derived == pb.TxValidationCode_MVCC_READ_CONFLICT {
				r.Reason = "a read's version is not the committed one, or an earlier transaction of the block wrote the key"
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// validate runs the transaction validator (creator, VSCC, ...) over the
// transactions idx of b, setting their codes in derived; keepMVCC leaves a
// code alone where the validator finds the transaction VALID.
func (v *verifier) validate(b *cb.Block, idx []int, derived validation.TxFilter, keepMVCC bool) error {
	if len(idx) == 0 {
		return nil
	}
	view := &cb.Block{Header: b.Header, Data: &cb.BlockData{Data: make([][]byte, len(idx))}, Metadata: b.Metadata}
	for j, i := range idx {
		view.Data.Data[j] = b.Data.Data[i]
	}
	v.mu.Lock()
	v.viewIndex = idx
	v.mu.Unlock()
	codes, err := v.tv.Validate(view)
	if err != nil {
		return err
	}
	for j, i := range idx {
		if keepMVCC && codes.IsValid(j) {
			continue
		}
		derived.Set(i, codes.Code(j))
	}
	return nil
}

// cheap is the validator's checks without cryptography, for an unsampled
// transaction: it decodes to its read-write sets, its header fields hold,
// its ID is its nonce and creator's, it is of this channel and its ID is
// new to the ledger.
func (v *verifier) cheap(raw []byte) bool {
	t, err := validation.ParseEndorserTx(raw)
	if err != nil || t == nil || t.Action == nil {
		return false
	}
	chdr, shdr := t.ChannelHeader, t.SignatureHeader
	if chdr.Type != int32(cb.HeaderType_ENDORSER_TRANSACTION) || chdr.Epoch != 0 || len(shdr.Nonce) == 0 || len(shdr.Creator) == 0 {
		return false
	}
	if protoutil.ComputeTxID(shdr.Nonce, shdr.Creator) != chdr.TxId || chdr.ChannelId != v.member.Channel {
		return false
	}
	_, dup := v.index[chdr.TxId]
	return !dup
}

// configTx checks a CONFIG transaction after the genesis block as Fabric
// 1.2's ValidateTransaction and validator do: header fields, the creator's
// signature, a configuration envelope, the channel. A valid one's
// membership replaces the channel's.
func (v *verifier) configTx(raw []byte) (pb.TxValidationCode, *Membership, string) {
	env := &cb.Envelope{}
	if err := proto.Unmarshal(raw, env); err != nil {
		return pb.TxValidationCode_INVALID_OTHER_REASON, nil, err.Error()
	}
	payload := &cb.Payload{}
	if err := proto.Unmarshal(env.Payload, payload); err != nil {
		return pb.TxValidationCode_BAD_PAYLOAD, nil, err.Error()
	}
	chdr, shdr, _ := headers(raw)
	if payload.Header == nil || chdr == nil || shdr == nil || chdr.Epoch != 0 || len(shdr.Nonce) == 0 || len(shdr.Creator) == 0 {
		return pb.TxValidationCode_BAD_COMMON_HEADER, nil, "bad common header"
	}
	creator, err := v.mgr.DeserializeIdentity(shdr.Creator)
	if err != nil {
		return pb.TxValidationCode_BAD_CREATOR_SIGNATURE, nil, "creator: " + err.Error()
	}
	if err := creator.Verify(env.Payload, env.Signature); err != nil {
		return pb.TxValidationCode_BAD_CREATOR_SIGNATURE, nil, "creator signature: " + err.Error()
	}
	if chdr.ChannelId != v.member.Channel {
		return pb.TxValidationCode_TARGET_CHAIN_NOT_FOUND, nil, fmt.Sprintf("channel %q is not %q", chdr.ChannelId, v.member.Channel)
	}
	_, _, cfg, err := configEnvelope(raw)
	if err != nil {
		return pb.TxValidationCode_INVALID_CONFIG_TRANSACTION, nil, err.Error()
	}
	m, err := membershipFromConfig(cfg)
	if err != nil {
		return pb.TxValidationCode_VALID, nil, ""
	}
	m.Channel = v.member.Channel
	return pb.TxValidationCode_VALID, m, ""
}
