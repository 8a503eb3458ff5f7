package main

import (
	"errors"
	"fmt"
	"time"

	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
)

// Config is loadgen.yaml (see loadgen.example.yaml for every key).
type Config struct {
	// MSPDir and MSPID: the client identity that signs proposals and envelopes.
	MSPDir string `yaml:"mspDir"`
	MSPID  string `yaml:"mspID"`
	// GenesisBlock of the channel (gives the channel ID).
	GenesisBlock string `yaml:"genesisBlock"`
	// Endorsers are peer addresses; each transaction goes to EndorsersPerTx
	// of them, chosen round-robin.
	Endorsers      []string `yaml:"endorsers"`
	EndorsersPerTx int      `yaml:"endorsersPerTx"`
	// Orderers are orderer addresses; Broadcast stream k uses Orderers[k % len].
	Orderers []string `yaml:"orderers"`
	// BroadcastToAll sends every envelope to every orderer and takes the
	// quorum's answer (a BFT ordering service: Fabric v3's SmartBFT).
	BroadcastToAll bool `yaml:"broadcastToAll"`
	// TLSRootCerts are PEM files of the CAs of the peers' and orderers' TLS
	// certificates: given, every connection is TLS (Fabric v2.5/v3.1).
	TLSRootCerts []string `yaml:"tlsRootCerts"`
	// Chaincode is the money-transfer chaincode's name.
	Chaincode string `yaml:"chaincode"`
	// Workload is "money-transfer" (the default) or "smallbank": setup
	// creates smallbank accounts and the transfer phase sends Caliper's
	// smallbank operations (workloads/smallbank) instead of transfers; or
	// "envelopes" (envelopes.go): no endorser and no chaincode, the transfer
	// phase signs transfer.transactions envelopes of opaque data of
	// transfer.payloadBytes bytes of data and sends them to the orderers.
	Workload string `yaml:"workload"`
	// Phase is "setup" or "transfer" (--phase overrides).
	Phase string `yaml:"phase"`
	// Seed of the random choices (conflicting transfers).
	Seed int64 `yaml:"seed"`
	// Accounts is the number of accounts setup creates and transfers use;
	// 0 (the default) means 2 × transfer.transactions, enough for a
	// conflict-free run.
	Accounts int `yaml:"accounts"`
	// EndorseConcurrency is how many proposals are in flight at once.
	EndorseConcurrency int `yaml:"endorseConcurrency"`
	// Streams is the number of Broadcast streams envelopes are sent over.
	Streams int `yaml:"streams"`
	// Setup and Transfer hold the parameters of each phase.
	Setup    SetupConfig    `yaml:"setup"`
	Transfer TransferConfig `yaml:"transfer"`
	// MutationsOut is where the transfer phase writes mutations.csv
	// (--mutations; not a key of the file).
	MutationsOut string `yaml:"-"`
}

// SetupConfig is the `setup` section.
type SetupConfig struct {
	// Deploy the chaincode through lscc first (false if already deployed).
	Deploy           bool         `yaml:"deploy"`
	ChaincodeVersion string       `yaml:"chaincodeVersion"`
	Policy           PolicyConfig `yaml:"endorsementPolicy"`
	InitialBalance   int64        `yaml:"initialBalance"`
	// PaddingBytes stored with each new account.
	PaddingBytes int `yaml:"paddingBytes"`
	// Wait for every create to commit (watching the first endorser's
	// Deliver) before exiting; false leaves waiting to the caller.
	Wait        bool          `yaml:"wait"`
	WaitTimeout time.Duration `yaml:"waitTimeout"`
}

// PolicyConfig is an endorsement policy: exactly one of the two lists.
type PolicyConfig struct {
	// AnyMemberOf: one signature of a member of any listed MSP (Fabric's
	// default policy with one org: OR('Org1MSP.member')).
	AnyMemberOf []string `yaml:"anyMemberOf"`
	// AllMemberOf: one signature of a member of each listed MSP (AND(...)).
	AllMemberOf []string `yaml:"allMemberOf"`
}

// TransferConfig is the `transfer` section.
type TransferConfig struct {
	// Transactions to pre-endorse and send.
	Transactions int `yaml:"transactions"`
	// ConflictRate is the fraction of transfers whose source account was
	// already used by an earlier transfer of this run (an MVCC conflict).
	ConflictRate float64 `yaml:"conflictRate"`
	// PayloadBytes of padding each transfer carries (FastFabric: 2.9 KB).
	PayloadBytes int   `yaml:"payloadBytes"`
	Amount       int64 `yaml:"amount"`
	// Rate in tx/s for an open-loop schedule; 0 sends as fast as accepted.
	Rate float64 `yaml:"rate"`
	// Mutations (docs/validity.md, item 2), each a count or a fraction of
	// the transfers (Share), evenly spaced over the run and written to
	// mutations.csv: ForgeEndorsement corrupts the endorsement signature
	// (VSCC: ENDORSEMENT_POLICY_FAILURE), CorruptCreator the creator's
	// envelope signature (BAD_CREATOR_SIGNATURE; a Fabric orderer refuses
	// it at broadcast, FORBIDDEN), StaleRead makes the transfer read an
	// account an earlier transfer of its stream overwrites
	// (MVCC_READ_CONFLICT). --forge-endorsement, --corrupt-creator and
	// --stale-read override.
	ForgeEndorsement Share `yaml:"forgeEndorsement"`
	CorruptCreator   Share `yaml:"corruptCreator"`
	StaleRead        Share `yaml:"staleRead"`
}

// defaults returns the configuration before the file is applied.
func defaults() Config {
	return Config{
		EndorsersPerTx: 1, Chaincode: "money-transfer", Workload: "money-transfer", Phase: "transfer", Seed: 1,
		EndorseConcurrency: 16, Streams: 1, MutationsOut: "mutations.csv",
		Setup:    SetupConfig{Deploy: true, ChaincodeVersion: "1.0", InitialBalance: 1_000_000, Wait: true, WaitTimeout: 5 * time.Minute},
		Transfer: TransferConfig{PayloadBytes: 2900, Amount: 1},
	}
}

// check validates a loaded configuration.
func (c *Config) check() error {
	if c.Accounts == 0 {
		c.Accounts = 2 * c.Transfer.Transactions
	}
	if err := c.checkClient(); err != nil {
		return err
	}
	if c.Workload == EnvelopesWorkload {
		return c.checkEnvelopes()
	}
	switch {
	case len(c.Endorsers) == 0:
		return errors.New("endorsers: at least one address is required")
	case c.EndorsersPerTx < 1 || c.EndorsersPerTx > len(c.Endorsers):
		return fmt.Errorf("endorsersPerTx must be between 1 and the number of endorsers (%d)", len(c.Endorsers))
	case c.Chaincode == "":
		return errors.New("chaincode is required")
	case c.Workload != "money-transfer" && c.Workload != "smallbank":
		return fmt.Errorf("workload must be money-transfer, smallbank or %s, not %q", EnvelopesWorkload, c.Workload)
	case c.Phase != "setup" && c.Phase != "transfer":
		return fmt.Errorf("phase must be setup or transfer, not %q", c.Phase)
	case c.Accounts < 2:
		return errors.New("accounts must be at least 2 (set accounts, or transfer.transactions for the default of 2 per transfer)")
	case c.EndorseConcurrency < 1:
		return errors.New("endorseConcurrency must be at least 1")
	case c.Streams < 1:
		return errors.New("streams must be at least 1")
	case c.Setup.InitialBalance < 0 || c.Setup.PaddingBytes < 0:
		return errors.New("setup.initialBalance and setup.paddingBytes must not be negative")
	case c.Transfer.Transactions < 0 || c.Transfer.PayloadBytes < 0 || c.Transfer.Amount < 0:
		return errors.New("transfer.transactions, payloadBytes and amount must not be negative")
	case c.Transfer.ConflictRate < 0 || c.Transfer.ConflictRate > 1:
		return errors.New("transfer.conflictRate must be within [0, 1]")
	case c.Transfer.Rate < 0:
		return errors.New("transfer.rate must not be negative")
	}
	if c.Phase == "transfer" {
		if _, err := c.mutations(); err != nil {
			return fmt.Errorf("transfer.forgeEndorsement, corruptCreator, staleRead: %w", err)
		}
	}
	if c.Phase == "setup" && c.Setup.Deploy {
		if _, err := c.Setup.Policy.envelope(); err != nil {
			return fmt.Errorf("setup.endorsementPolicy: %w", err)
		}
	}
	return nil
}

// checkClient validates what every workload needs to sign and send: an identity, the channel and the orderers.
func (c *Config) checkClient() error {
	switch {
	case c.MSPDir == "" || c.MSPID == "":
		return errors.New("mspDir and mspID are required")
	case c.GenesisBlock == "":
		return errors.New("genesisBlock is required")
	case len(c.Orderers) == 0:
		return errors.New("orderers: at least one address is required")
	}
	return nil
}

// checkEnvelopes validates the configuration of the envelopes workload: no endorser, chaincode,
// accounts or mutation applies; only the transfer phase exists.
func (c *Config) checkEnvelopes() error {
	t := c.Transfer
	switch {
	case c.Phase != "transfer":
		return fmt.Errorf("workload %s has only the transfer phase, not %q", EnvelopesWorkload, c.Phase)
	case c.Streams < 1:
		return errors.New("streams must be at least 1")
	case t.Transactions < 1:
		return errors.New("transfer.transactions must be at least 1")
	case t.PayloadBytes < 1:
		return errors.New("transfer.payloadBytes (the envelope's data) must be at least 1")
	case t.Rate < 0:
		return errors.New("transfer.rate must not be negative")
	case t.ConflictRate != 0 || t.ForgeEndorsement != (Share{}) || t.CorruptCreator != (Share{}) || t.StaleRead != (Share{}):
		return fmt.Errorf("workload %s has no conflicts or mutations (transfer.conflictRate, forgeEndorsement, "+
			"corruptCreator, staleRead must be 0)", EnvelopesWorkload)
	}
	return nil
}

// mutations plans the transfers' mutations (PlanMutations).
func (c *Config) mutations() ([]Mutation, error) {
	t := c.Transfer
	return PlanMutations(t.Transactions, c.Streams, t.CorruptCreator.Of(t.Transactions),
		t.ForgeEndorsement.Of(t.Transactions), t.StaleRead.Of(t.Transactions))
}

func (p PolicyConfig) envelope() (*cb.SignaturePolicyEnvelope, error) {
	switch {
	case len(p.AnyMemberOf) > 0 && len(p.AllMemberOf) > 0:
		return nil, errors.New("give anyMemberOf or allMemberOf, not both")
	case len(p.AnyMemberOf) > 0:
		return policy.SignedByAnyMember(p.AnyMemberOf...), nil
	case len(p.AllMemberOf) > 0:
		return policy.SignedByEachMember(p.AllMemberOf...), nil
	}
	return nil, errors.New("anyMemberOf or allMemberOf is required")
}
