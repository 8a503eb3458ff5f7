// Package peer assembles the reference Fabric 1.2 peer: the committer fed
// by a Deliver client on the orderer, the endorser, the peer's own Deliver
// service (full and filtered blocks with validation codes) and Prometheus
// metrics, configured from one strict YAML file.
package peer

import (
	"fabricrepro/internal/config"
)

// Config is peer.yaml: everything sits under the top-level key "peer".
type Config struct {
	Peer Settings `yaml:"peer"`
}

// Settings are the peer's settings (see cmd/peer/peer.example.yaml).
type Settings struct {
	ListenAddress  string     `yaml:"listenAddress"`
	MetricsAddress string     `yaml:"metricsAddress"`
	MSPDir         string     `yaml:"mspDir"`
	MSPID          string     `yaml:"mspID"`
	GenesisBlock   string     `yaml:"genesisBlock"`
	DataDir        string     `yaml:"dataDir"`
	BlockLog       string     `yaml:"blockLog"`
	Orderer        Orderer    `yaml:"orderer"`
	Validation     Validation `yaml:"validation"`
	Roles          Roles      `yaml:"roles"`
	GRPC           GRPC       `yaml:"grpc"`
}

// Orderer is where the committer pulls blocks from.
type Orderer struct {
	Address string `yaml:"address"`
	// ReconnectDelay is the pause before re-dialing after a failure.
	ReconnectDelay string `yaml:"reconnectDelay"`
}

// Validation configures the committer's validation stage.
type Validation struct {
	// VSCCWorkers is the number of goroutines validating a block's
	// transactions (0 = number of CPUs, Fabric 1.2's default).
	VSCCWorkers int `yaml:"vsccWorkers"`
}

// Roles selects what the peer does.
type Roles struct {
	Endorser  bool `yaml:"endorser"`
	Committer bool `yaml:"committer"`
}

// GRPC limits message sizes.
type GRPC struct {
	MaxRecvMsgSize int `yaml:"maxRecvMsgSize"`
	MaxSendMsgSize int `yaml:"maxSendMsgSize"`
}

// Defaults is every default, in one place.
func Defaults() Config {
	return Config{Peer: Settings{
		ListenAddress:  "127.0.0.1:7051",
		MetricsAddress: "127.0.0.1:9443",
		MSPID:          "Org1MSP",
		GenesisBlock:   "genesis.block",
		DataDir:        "peer-data",
		BlockLog:       "peer-blocks.csv",
		Orderer:        Orderer{Address: "127.0.0.1:7050", ReconnectDelay: "500ms"},
		Roles:          Roles{Endorser: true, Committer: true},
		GRPC:           GRPC{MaxRecvMsgSize: 100 << 20, MaxSendMsgSize: 100 << 20},
	}}
}

// Load reads path over the defaults, rejecting unknown keys and wrong types.
func Load(path string) (Config, error) {
	c := Defaults()
	if err := config.Load(path, &c); err != nil {
		return c, err
	}
	if c.Peer.MSPDir == "" {
		return c, &config.Error{File: path, Msg: "peer.mspDir is required"}
	}
	if c.Peer.Validation.VSCCWorkers < 0 {
		return c, &config.Error{File: path, Msg: "peer.validation.vsccWorkers must not be negative"}
	}
	if !c.Peer.Roles.Endorser && !c.Peer.Roles.Committer {
		return c, &config.Error{File: path, Msg: "peer.roles: at least one of endorser and committer must be true"}
	}
	return c, nil
}
