// Package channelconfig builds a channel's genesis block and reads it back
// into what orderers and peers need: the organizations' MSPs, the channel's
// policies and the orderer's batch parameters.
//
// The config tree follows Fabric 1.2's layout (Channel → Orderer/Application
// groups → one group per organization with an "MSP" value). One deviation:
// the channel's Writers/Readers and the orderer's BlockValidation policy are
// explicit signature policies, where Fabric composes them from per-org
// policies with ImplicitMeta rules; the signatures checked are the same.
package channelconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/msp"
	"fabricrepro/internal/policy"
	"fabricrepro/internal/protoutil"
	cb "fabricrepro/internal/protos/common"
	mspproto "fabricrepro/internal/protos/msp"
	ab "fabricrepro/internal/protos/orderer"
)

// Group and value keys, as Fabric names them.
const (
	OrdererGroup      = "Orderer"
	ApplicationGroup  = "Application"
	MSPKey            = "MSP"
	BatchSizeKey      = "BatchSize"
	BatchTimeoutKey   = "BatchTimeout"
	ConsensusTypeKey  = "ConsensusType"
	WritersPolicy     = "Writers"
	ReadersPolicy     = "Readers"
	BlockValidationPl = "BlockValidation"
)

// Org is one organization of the channel.
type Org struct {
	MSPID     string
	RootCerts [][]byte // PEM
	Orderer   bool     // an orderer organization (else an application/peer org)
}

// Batch holds the block cutter's parameters.
type Batch struct {
	MaxMessageCount   uint32
	AbsoluteMaxBytes  uint32
	PreferredMaxBytes uint32
	Timeout           time.Duration
	ConsensusType     string // "solo" (more later)
}

// DefaultBatch is Fabric 1.2's sample configtx.yaml batch configuration.
var DefaultBatch = Batch{MaxMessageCount: 10, AbsoluteMaxBytes: 99 * 1024 * 1024, PreferredMaxBytes: 512 * 1024, Timeout: 2 * time.Second, ConsensusType: "solo"}

// OrgsFromCryptoDir lists the organizations that cryptogen wrote under dir.
func OrgsFromCryptoDir(dir string) ([]Org, error) {
	var orgs []Org
	for _, kind := range []string{"ordererOrganizations", "peerOrganizations"} {
		entries, err := os.ReadDir(filepath.Join(dir, kind))
		if err != nil {
			return nil, fmt.Errorf("crypto dir %s: %w", dir, err)
		}
		for _, e := range entries {
			orgDir := filepath.Join(dir, kind, e.Name())
			id, err := os.ReadFile(filepath.Join(orgDir, "mspid"))
			if err != nil {
				return nil, fmt.Errorf("organization %s: %w", orgDir, err)
			}
			ca, err := os.ReadFile(filepath.Join(orgDir, "ca", "ca-cert.pem"))
			if err != nil {
				return nil, fmt.Errorf("organization %s: %w", orgDir, err)
			}
			orgs = append(orgs, Org{MSPID: strings.TrimSpace(string(id)), RootCerts: [][]byte{ca}, Orderer: kind == "ordererOrganizations"})
		}
	}
	sort.Slice(orgs, func(i, j int) bool { return orgs[i].MSPID < orgs[j].MSPID })
	return orgs, nil
}

// GenesisBlock builds block 0 of channel: one CONFIG envelope.
func GenesisBlock(channel string, orgs []Org, batch Batch) (*cb.Block, error) {
	var ordererIDs, appIDs []string
	orderer := &cb.ConfigGroup{Groups: map[string]*cb.ConfigGroup{}, Values: map[string]*cb.ConfigValue{}, Policies: map[string]*cb.ConfigPolicy{}}
	app := &cb.ConfigGroup{Groups: map[string]*cb.ConfigGroup{}, Values: map[string]*cb.ConfigValue{}, Policies: map[string]*cb.ConfigPolicy{}}
	for _, o := range orgs {
		mspConf := protoutil.MarshalOrPanic(&mspproto.MSPConfig{Type: 0, Config: protoutil.MarshalOrPanic(&mspproto.FabricMSPConfig{Name: o.MSPID, RootCerts: o.RootCerts})})
		g := &cb.ConfigGroup{Values: map[string]*cb.ConfigValue{MSPKey: {Value: mspConf}}}
		if o.Orderer {
			orderer.Groups[o.MSPID] = g
			ordererIDs = append(ordererIDs, o.MSPID)
		} else {
			app.Groups[o.MSPID] = g
			appIDs = append(appIDs, o.MSPID)
		}
	}
	if len(ordererIDs) == 0 || len(appIDs) == 0 {
		return nil, errors.New("a channel needs at least one orderer and one application organization")
	}
	orderer.Values[BatchSizeKey] = &cb.ConfigValue{Value: protoutil.MarshalOrPanic(&ab.BatchSize{
		MaxMessageCount: batch.MaxMessageCount, AbsoluteMaxBytes: batch.AbsoluteMaxBytes, PreferredMaxBytes: batch.PreferredMaxBytes})}
	orderer.Values[BatchTimeoutKey] = &cb.ConfigValue{Value: protoutil.MarshalOrPanic(&ab.BatchTimeout{Timeout: batch.Timeout.String()})}
	orderer.Values[ConsensusTypeKey] = &cb.ConfigValue{Value: protoutil.MarshalOrPanic(&ab.ConsensusType{Type: batch.ConsensusType})}
	orderer.Policies[BlockValidationPl] = signaturePolicy(policy.SignedByAnyMember(ordererIDs...))
	members := append(append([]string{}, appIDs...), ordererIDs...)
	channelGroup := &cb.ConfigGroup{
		Groups: map[string]*cb.ConfigGroup{OrdererGroup: orderer, ApplicationGroup: app},
		Policies: map[string]*cb.ConfigPolicy{
			WritersPolicy: signaturePolicy(policy.SignedByAnyMember(members...)),
			ReadersPolicy: signaturePolicy(policy.SignedByAnyMember(members...)),
		},
	}
	env, err := protoutil.SignedEnvelope(cb.HeaderType_CONFIG, channel, nil, &cb.ConfigEnvelope{Config: &cb.Config{Sequence: 0, ChannelGroup: channelGroup}})
	if err != nil {
		return nil, err
	}
	block := protoutil.NewBlock(0, nil)
	block.Data.Data = [][]byte{protoutil.MarshalOrPanic(env)}
	block.Header.DataHash = protoutil.BlockDataHash(block.Data)
	block.Metadata.Metadata[cb.BlockMetadataIndex_LAST_CONFIG] = protoutil.MarshalOrPanic(&cb.Metadata{Value: protoutil.MarshalOrPanic(&cb.LastConfig{Index: 0})})
	return block, nil
}

func signaturePolicy(env *cb.SignaturePolicyEnvelope) *cb.ConfigPolicy {
	return &cb.ConfigPolicy{Policy: &cb.Policy{Type: int32(cb.Policy_SIGNATURE), Value: protoutil.MarshalOrPanic(env)}}
}

// Bundle is a channel's configuration, ready to use.
type Bundle struct {
	ChannelID       string
	MSPs            *msp.Manager
	OrdererMSPs     []string
	ApplicationMSPs []string
	Writers         *policy.Policy
	Readers         *policy.Policy
	BlockValidation *policy.Policy
	Batch           Batch
}

// FromGenesisBlock reads a genesis block.
func FromGenesisBlock(block *cb.Block) (*Bundle, error) {
	if block == nil || block.Data == nil || len(block.Data.Data) != 1 {
		return nil, errors.New("genesis block must hold exactly one config envelope")
	}
	env := &cb.Envelope{}
	if err := proto.Unmarshal(block.Data.Data[0], env); err != nil {
		return nil, fmt.Errorf("genesis envelope: %w", err)
	}
	payload, chdr, _, err := protoutil.UnmarshalPayload(env)
	if err != nil {
		return nil, fmt.Errorf("genesis envelope: %w", err)
	}
	if chdr.Type != int32(cb.HeaderType_CONFIG) {
		return nil, fmt.Errorf("genesis envelope has type %d, want CONFIG", chdr.Type)
	}
	cfgEnv := &cb.ConfigEnvelope{}
	if err := proto.Unmarshal(payload.Data, cfgEnv); err != nil || cfgEnv.Config == nil || cfgEnv.Config.ChannelGroup == nil {
		return nil, errors.New("genesis block: bad config envelope")
	}
	root := cfgEnv.Config.ChannelGroup
	b := &Bundle{ChannelID: chdr.ChannelId}
	var msps []*msp.MSP
	for _, gname := range []string{OrdererGroup, ApplicationGroup} {
		g := root.Groups[gname]
		if g == nil {
			return nil, fmt.Errorf("genesis block: no %s group", gname)
		}
		for orgName, og := range g.Groups {
			v := og.Values[MSPKey]
			if v == nil {
				return nil, fmt.Errorf("organization %s has no MSP value", orgName)
			}
			mc := &mspproto.MSPConfig{}
			fc := &mspproto.FabricMSPConfig{}
			if err := proto.Unmarshal(v.Value, mc); err != nil {
				return nil, err
			}
			if err := proto.Unmarshal(mc.Config, fc); err != nil {
				return nil, err
			}
			m, err := msp.New(fc.Name, fc.RootCerts)
			if err != nil {
				return nil, err
			}
			msps = append(msps, m)
			if gname == OrdererGroup {
				b.OrdererMSPs = append(b.OrdererMSPs, fc.Name)
			} else {
				b.ApplicationMSPs = append(b.ApplicationMSPs, fc.Name)
			}
		}
	}
	sort.Strings(b.OrdererMSPs)
	sort.Strings(b.ApplicationMSPs)
	b.MSPs = msp.NewManager(msps...)
	if b.Writers, err = compile(root.Policies[WritersPolicy], b.MSPs); err != nil {
		return nil, fmt.Errorf("Writers policy: %w", err)
	}
	if b.Readers, err = compile(root.Policies[ReadersPolicy], b.MSPs); err != nil {
		return nil, fmt.Errorf("Readers policy: %w", err)
	}
	ord := root.Groups[OrdererGroup]
	if b.BlockValidation, err = compile(ord.Policies[BlockValidationPl], b.MSPs); err != nil {
		return nil, fmt.Errorf("BlockValidation policy: %w", err)
	}
	bs, bt, ct := &ab.BatchSize{}, &ab.BatchTimeout{}, &ab.ConsensusType{}
	for key, m := range map[string]proto.Message{BatchSizeKey: bs, BatchTimeoutKey: bt, ConsensusTypeKey: ct} {
		v := ord.Values[key]
		if v == nil {
			return nil, fmt.Errorf("orderer config has no %s", key)
		}
		if err := proto.Unmarshal(v.Value, m); err != nil {
			return nil, fmt.Errorf("orderer %s: %w", key, err)
		}
	}
	timeout, err := time.ParseDuration(bt.Timeout)
	if err != nil {
		return nil, fmt.Errorf("orderer BatchTimeout: %w", err)
	}
	b.Batch = Batch{MaxMessageCount: bs.MaxMessageCount, AbsoluteMaxBytes: bs.AbsoluteMaxBytes, PreferredMaxBytes: bs.PreferredMaxBytes, Timeout: timeout, ConsensusType: ct.Type}
	return b, nil
}

func compile(cp *cb.ConfigPolicy, mgr *msp.Manager) (*policy.Policy, error) {
	if cp == nil || cp.Policy == nil {
		return nil, errors.New("missing")
	}
	if cp.Policy.Type != int32(cb.Policy_SIGNATURE) {
		return nil, fmt.Errorf("policy type %d not supported", cp.Policy.Type)
	}
	return policy.Unmarshal(cp.Policy.Value, mgr)
}

// ChannelID returns the channel a block belongs to: the channel ID in the
// header of its first envelope. A client (loadgen, blockwatch) needs no more
// of a channel's genesis block, so it also reads the block 0 that a real
// Fabric 1.2 orderer makes for a channel, whose ImplicitMeta policies
// FromGenesisBlock does not compile.
func ChannelID(block *cb.Block) (string, error) {
	if block == nil || block.Data == nil || len(block.Data.Data) == 0 {
		return "", errors.New("block has no envelope")
	}
	env := &cb.Envelope{}
	if err := proto.Unmarshal(block.Data.Data[0], env); err != nil {
		return "", fmt.Errorf("block envelope: %w", err)
	}
	_, chdr, _, err := protoutil.UnmarshalPayload(env)
	if err != nil {
		return "", fmt.Errorf("block envelope: %w", err)
	}
	if chdr.ChannelId == "" {
		return "", errors.New("block envelope names no channel")
	}
	return chdr.ChannelId, nil
}

// ReadChannelID reads a block file and returns its channel (ChannelID).
func ReadChannelID(path string) (string, error) {
	b, err := ReadBlock(path)
	if err != nil {
		return "", err
	}
	id, err := ChannelID(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}

// ReadBlock reads a marshaled block from a file.
func ReadBlock(path string) (*cb.Block, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b := &cb.Block{}
	if err := proto.Unmarshal(raw, b); err != nil {
		return nil, fmt.Errorf("%s: not a block: %w", path, err)
	}
	return b, nil
}
