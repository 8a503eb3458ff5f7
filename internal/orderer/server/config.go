package server

import (
	"errors"
	"fmt"
	"time"

	"fabricrepro/internal/config"
	"fabricrepro/internal/orderer/deliver"
	"fabricrepro/internal/orderer/ledger"
)

// File is the layout of orderer.yaml: everything sits under "orderer" so
// keys are named orderer.listenAddress, orderer.ledger.type, ...
type File struct {
	Orderer Config `yaml:"orderer"`
}

// Config is the orderer's configuration. cmd/orderer/orderer.example.yaml
// documents every key.
type Config struct {
	ListenAddress  string          `yaml:"listenAddress"`
	MetricsAddress string          `yaml:"metricsAddress"`
	GenesisBlock   string          `yaml:"genesisBlock"`
	MSPDir         string          `yaml:"mspDir"`
	MSPID          string          `yaml:"mspID"`
	Ledger         LedgerConfig    `yaml:"ledger"`
	Consensus      ConsensusConfig `yaml:"consensus"`
	GRPC           GRPCConfig      `yaml:"grpc"`
	Deliver        DeliverConfig   `yaml:"deliver"`
}

// LedgerConfig chooses the block store.
type LedgerConfig struct {
	Type    string `yaml:"type"`    // ram | file
	Dir     string `yaml:"dir"`     // file ledger: one sub-directory per channel
	RAMSize int    `yaml:"ramSize"` // ram ledger: blocks kept per channel
	Fsync   bool   `yaml:"fsync"`   // file ledger: fsync every block (Fabric does)
}

// ConsensusConfig chooses the consenter.
type ConsensusConfig struct {
	Type string `yaml:"type"` // solo
}

// GRPCConfig sizes the gRPC server.
type GRPCConfig struct {
	MaxRecvMsgSize int `yaml:"maxRecvMsgSize"` // bytes
	MaxSendMsgSize int `yaml:"maxSendMsgSize"` // bytes
}

// DeliverConfig tunes Deliver.
type DeliverConfig struct {
	TimeWindow time.Duration `yaml:"timeWindow"` // allowed clock skew of requests
}

// Defaults is the one source of the orderer's defaults.
func Defaults() Config {
	return Config{
		ListenAddress:  "127.0.0.1:7050",
		MetricsAddress: "127.0.0.1:8443",
		GenesisBlock:   "genesis.block",
		MSPID:          "OrdererMSP",
		Ledger:         LedgerConfig{Type: "ram", Dir: "orderer-ledger", RAMSize: ledger.DefaultRAMSize, Fsync: true},
		Consensus:      ConsensusConfig{Type: "solo"},
		// Fabric 1.2's orderer accepts and sends messages up to 100 MB.
		GRPC:    GRPCConfig{MaxRecvMsgSize: 100 * 1024 * 1024, MaxSendMsgSize: 100 * 1024 * 1024},
		Deliver: DeliverConfig{TimeWindow: deliver.DefaultTimeWindow},
	}
}

// Load reads orderer.yaml over the defaults and validates the result.
func Load(path string) (Config, error) {
	f := File{Orderer: Defaults()}
	if err := config.Load(path, &f); err != nil {
		return Config{}, err
	}
	if err := f.Orderer.Validate(); err != nil {
		return Config{}, &config.Error{File: path, Msg: err.Error()}
	}
	return f.Orderer, nil
}

// Validate checks values that the YAML types cannot.
func (c Config) Validate() error {
	var errs []error
	if c.ListenAddress == "" {
		errs = append(errs, errors.New("orderer.listenAddress must be set"))
	}
	if c.GenesisBlock == "" {
		errs = append(errs, errors.New("orderer.genesisBlock must be set"))
	}
	if c.MSPDir == "" || c.MSPID == "" {
		errs = append(errs, errors.New("orderer.mspDir and orderer.mspID must be set"))
	}
	switch c.Ledger.Type {
	case "ram":
		if c.Ledger.RAMSize <= 0 {
			errs = append(errs, fmt.Errorf("orderer.ledger.ramSize must be positive, got %d", c.Ledger.RAMSize))
		}
	case "file":
		if c.Ledger.Dir == "" {
			errs = append(errs, errors.New("orderer.ledger.dir must be set for a file ledger"))
		}
	default:
		errs = append(errs, fmt.Errorf("orderer.ledger.type must be ram or file, got %q", c.Ledger.Type))
	}
	if c.Consensus.Type != "solo" {
		errs = append(errs, fmt.Errorf("orderer.consensus.type must be solo, got %q", c.Consensus.Type))
	}
	if c.GRPC.MaxRecvMsgSize <= 0 || c.GRPC.MaxSendMsgSize <= 0 {
		errs = append(errs, errors.New("orderer.grpc.maxRecvMsgSize and maxSendMsgSize must be positive"))
	}
	if c.Deliver.TimeWindow <= 0 {
		errs = append(errs, errors.New("orderer.deliver.timeWindow must be positive"))
	}
	return errors.Join(errs...)
}
