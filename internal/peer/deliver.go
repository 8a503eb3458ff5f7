package peer

import (
	"context"
	"errors"
	"fmt"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/ledger/blkstorage"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// DeliverService is the peer's Deliver service (Fabric's common/deliver
// handler behind protos.Deliver): clients send a signed SeekInfo envelope
// and get blocks from the block store, with their TRANSACTIONS_FILTER, or
// filtered blocks carrying each transaction's validation code.
type DeliverService struct {
	pb.UnimplementedDeliverServer
	ChannelID string
	Store     blkstorage.BlockStore
	// Readers is the channel's Readers policy: the seek envelope's signer
	// must satisfy it.
	Readers *policy.Policy
	// Done ends every stream when closed (peer shutdown).
	Done <-chan struct{}
}

var _ pb.DeliverServer = (*DeliverService)(nil)

// Deliver streams full blocks.
func (d *DeliverService) Deliver(srv grpc.BidiStreamingServer[cb.Envelope, pb.DeliverResponse]) error {
	return d.serve(srv, false)
}

// DeliverFiltered streams filtered blocks.
func (d *DeliverService) DeliverFiltered(srv grpc.BidiStreamingServer[cb.Envelope, pb.DeliverResponse]) error {
	return d.serve(srv, true)
}

func (d *DeliverService) serve(srv grpc.BidiStreamingServer[cb.Envelope, pb.DeliverResponse], filtered bool) error {
	for {
		env, err := srv.Recv()
		if err != nil {
			return nil // the client closed the stream
		}
		status, err := d.handle(srv, env, filtered)
		if err != nil {
			return err
		}
		if err := srv.Send(&pb.DeliverResponse{Type: &pb.DeliverResponse_Status{Status: status}}); err != nil {
			return err
		}
	}
}

// handle serves one seek request and returns the final status to send.
func (d *DeliverService) handle(srv grpc.BidiStreamingServer[cb.Envelope, pb.DeliverResponse], env *cb.Envelope, filtered bool) (cb.Status, error) {
	payload, chdr, shdr, err := protoutil.UnmarshalPayload(env)
	if err != nil {
		return cb.Status_BAD_REQUEST, nil
	}
	if chdr.ChannelId != d.ChannelID {
		return cb.Status_NOT_FOUND, nil
	}
	if d.Readers != nil {
		if err := d.Readers.Evaluate([]policy.SignedData{{Identity: shdr.Creator, Data: env.Payload, Signature: env.Signature}}); err != nil {
			return cb.Status_FORBIDDEN, nil
		}
	}
	seek := &ab.SeekInfo{}
	if err := proto.Unmarshal(payload.Data, seek); err != nil || seek.Start == nil || seek.Stop == nil {
		return cb.Status_BAD_REQUEST, nil
	}
	height := d.Store.Height()
	start, err := position(seek.Start, height)
	if err != nil {
		return cb.Status_BAD_REQUEST, nil
	}
	stop, err := position(seek.Stop, height)
	if err != nil {
		return cb.Status_BAD_REQUEST, nil
	}
	if _, newest := seek.Stop.Type.(*ab.SeekPosition_Newest); newest {
		stop = height - 1
	}
	if start > stop {
		return cb.Status_BAD_REQUEST, nil
	}
	ctx, cancel := context.WithCancel(srv.Context())
	defer cancel()
	if d.Done != nil {
		go func() {
			select {
			case <-d.Done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	for n := start; n <= stop; n++ {
		if seek.Behavior == ab.SeekInfo_FAIL_IF_NOT_READY && n >= d.Store.Height() {
			return cb.Status_NOT_FOUND, nil
		}
		if err := d.Store.WaitForHeight(ctx, n); err != nil {
			if errors.Is(ctx.Err(), context.Canceled) && srv.Context().Err() == nil {
				return cb.Status_SERVICE_UNAVAILABLE, nil // peer stopping
			}
			return 0, err
		}
		block, err := d.Store.BlockByNumber(n)
		if err != nil {
			return cb.Status_INTERNAL_SERVER_ERROR, nil
		}
		resp := &pb.DeliverResponse{Type: &pb.DeliverResponse_Block{Block: block}}
		if filtered {
			resp = &pb.DeliverResponse{Type: &pb.DeliverResponse_FilteredBlock{FilteredBlock: FilterBlock(d.ChannelID, block)}}
		}
		if err := srv.Send(resp); err != nil {
			return 0, err
		}
		if n == math.MaxUint64 {
			break
		}
	}
	return cb.Status_SUCCESS, nil
}

func position(p *ab.SeekPosition, height uint64) (uint64, error) {
	switch t := p.Type.(type) {
	case *ab.SeekPosition_Oldest:
		return 0, nil
	case *ab.SeekPosition_Newest:
		if height == 0 {
			return 0, nil
		}
		return height - 1, nil
	case *ab.SeekPosition_Specified:
		if t.Specified == nil {
			return 0, errors.New("nil specified position")
		}
		return t.Specified.Number, nil
	}
	return 0, fmt.Errorf("unknown seek position %T", p.Type)
}

// FilterBlock builds a FilteredBlock: per transaction its ID, header type
// and validation code (Fabric 1.2's filtered deliver, without chaincode
// events, which the reference chaincodes do not emit).
func FilterBlock(channel string, b *cb.Block) *pb.FilteredBlock {
	fb := &pb.FilteredBlock{ChannelId: channel, Number: b.Header.Number}
	var flags []byte
	if b.Metadata != nil && len(b.Metadata.Metadata) > int(cb.BlockMetadataIndex_TRANSACTIONS_FILTER) {
		flags = b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER]
	}
	for i, raw := range b.Data.Data {
		ft := &pb.FilteredTransaction{TxValidationCode: pb.TxValidationCode_NOT_VALIDATED}
		if i < len(flags) {
			ft.TxValidationCode = pb.TxValidationCode(flags[i])
		}
		env := &cb.Envelope{}
		if proto.Unmarshal(raw, env) == nil {
			if _, chdr, _, err := protoutil.UnmarshalPayload(env); err == nil {
				ft.Txid = chdr.TxId
				ft.Type = cb.HeaderType(chdr.Type)
			}
		}
		fb.FilteredTransactions = append(fb.FilteredTransactions, ft)
	}
	return fb
}
