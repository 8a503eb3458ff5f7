package peer

import (
	"fmt"

	"fabricrepro/internal/chaincode"
	"fabricrepro/internal/endorser"
	pb "fabricrepro/internal/protos/peer"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

// registerEndorser adds the endorser role: Endorser.ProcessProposal over the
// committed state, with the chaincodes this peer runs, holding the read
// side of the committer's state lock while simulating.
func registerEndorser(p *Peer) error {
	reg := chaincode.NewRegistry()
	if err := reg.Register(moneytransfer.Name, moneytransfer.Chaincode{}); err != nil {
		return err
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
