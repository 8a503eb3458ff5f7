package peer

import (
	"fmt"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/endorser"
	pb "fabricrepro/internal/protos/peer"
)

// registerEndorser adds the endorser role: Endorser.ProcessProposal over the
// committed state, with the chaincodes this peer runs (its command chooses
// them: the peer knows no workload), holding the read side of the
// committer's state lock while simulating.
func registerEndorser(p *Peer, reg *chaincode.Registry) error {
	if reg == nil {
		return fmt.Errorf("endorser role: no chaincodes to run")
	}
	e, err := endorser.New(endorser.Config{
		ChannelID:  p.bundle.ChannelID,
		Bundle:     p.bundle,
		Signer:     p.signer,
		State:      p.ledger.State,
		Chaincodes: reg,
		StateLock:  p.stateMu.RLocker(),
		TxIDExists: p.ledger.Store.TxIDExists,
	})
	if err != nil {
		return fmt.Errorf("endorser: %w", err)
	}
	pb.RegisterEndorserServer(p.grpc, e)
	return nil
}
