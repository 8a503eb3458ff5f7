// Package deliver serves AtomicBroadcast.Deliver with Fabric 1.2's
// common/deliver semantics: each request is a signed envelope carrying a
// SeekInfo; the signer must satisfy the channel's Readers policy; blocks from
// Start to Stop are sent one DeliverResponse each, then a SUCCESS status, and
// the stream waits for the next request. BLOCK_UNTIL_READY waits for blocks
// not yet written, FAIL_IF_NOT_READY answers NOT_FOUND instead. Any other
// status ends the stream.
package deliver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/orderer/channel"
	"fabricrepro/internal/orderer/metrics"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
)

// DefaultTimeWindow is Fabric's General.Authentication.TimeWindow: how far a
// request's timestamp may be from the orderer's clock.
const DefaultTimeWindow = 15 * time.Minute

// Registrar finds a channel by ID (nil if the orderer does not serve it).
type Registrar interface {
	GetChain(channelID string) *channel.Support
}

// Handler serves Deliver streams.
type Handler struct {
	Registrar  Registrar
	Metrics    *metrics.Metrics
	TimeWindow time.Duration // DefaultTimeWindow if zero
}

// Stream is the server side of a Deliver stream.
type Stream = ab.AtomicBroadcast_DeliverServer

// Handle serves one stream until the client closes it or a request fails.
func (h *Handler) Handle(srv Stream) error {
	ctx := srv.Context()
	h.Metrics.DeliverStreams.Inc()
	defer h.Metrics.DeliverStreams.Dec()
	for {
		env, err := srv.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		status, err := h.deliverBlocks(ctx, srv, env)
		if err != nil {
			return err
		}
		err = srv.Send(&ab.DeliverResponse{Type: &ab.DeliverResponse_Status{Status: status}})
		if status != cb.Status_SUCCESS || err != nil {
			return err
		}
	}
}

func (h *Handler) deliverBlocks(ctx context.Context, srv Stream, env *cb.Envelope) (cb.Status, error) {
	payload := &cb.Payload{}
	if err := proto.Unmarshal(env.GetPayload(), payload); err != nil || payload.Header == nil {
		return cb.Status_BAD_REQUEST, nil
	}
	chdr := &cb.ChannelHeader{}
	if err := proto.Unmarshal(payload.Header.ChannelHeader, chdr); err != nil {
		return cb.Status_BAD_REQUEST, nil
	}
	if err := h.validateChannelHeader(chdr); err != nil {
		log.Printf("deliver: rejecting request: %v", err)
		return cb.Status_BAD_REQUEST, nil
	}
	ch := h.Registrar.GetChain(chdr.ChannelId)
	if ch == nil {
		return cb.Status_NOT_FOUND, nil
	}
	errored := ch.Errored()
	select {
	case <-errored:
		return cb.Status_SERVICE_UNAVAILABLE, nil
	default:
	}

	// Fabric's SessionAC evaluates the Readers policy on the request once,
	// and again only if the config sequence changes (it never does here).
	sd, err := channel.AsSignedData(env)
	if err != nil {
		return cb.Status_BAD_REQUEST, nil
	}
	if err := ch.Readers().Evaluate([]policy.SignedData{sd}); err != nil {
		log.Printf("deliver: [channel: %s] client authorization failed: %v", chdr.ChannelId, err)
		return cb.Status_FORBIDDEN, nil
	}

	seek := &ab.SeekInfo{}
	if err := proto.Unmarshal(payload.Data, seek); err != nil {
		return cb.Status_BAD_REQUEST, nil
	}
	if seek.Start == nil || seek.Stop == nil || seek.Start.Type == nil || seek.Stop.Type == nil {
		return cb.Status_BAD_REQUEST, nil
	}

	lg := ch.Ledger()
	cursor, number := lg.Iterator(seek.Start)
	defer cursor.Close()
	var stopNum uint64
	switch stop := seek.Stop.Type.(type) {
	case *ab.SeekPosition_Oldest:
		stopNum = number
	case *ab.SeekPosition_Newest:
		// Start and stop both Newest: exactly one block, even if another
		// arrives meanwhile.
		if proto.Equal(seek.Start, seek.Stop) {
			stopNum = number
			break
		}
		stopNum = lg.Height() - 1
	case *ab.SeekPosition_Specified:
		stopNum = stop.Specified.Number
		if stopNum < number {
			return cb.Status_BAD_REQUEST, nil
		}
	}

	// Wake the iterator when the client goes away or the channel halts.
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-errored:
			cancel()
		case <-waitCtx.Done():
		}
	}()

	sent := h.Metrics.DeliverBlocksSent.WithLabelValues(chdr.ChannelId)
	for {
		if seek.Behavior == ab.SeekInfo_FAIL_IF_NOT_READY && number >= lg.Height() {
			return cb.Status_NOT_FOUND, nil
		}
		block, status := cursor.Next(waitCtx)
		if status != cb.Status_SUCCESS {
			if ctx.Err() != nil {
				return cb.Status_INTERNAL_SERVER_ERROR, fmt.Errorf("context finished before block retrieved: %w", ctx.Err())
			}
			select {
			case <-errored:
				return cb.Status_SERVICE_UNAVAILABLE, nil
			default:
			}
			return status, nil
		}
		number++
		if err := srv.Send(&ab.DeliverResponse{Type: &ab.DeliverResponse_Block{Block: block}}); err != nil {
			return cb.Status_INTERNAL_SERVER_ERROR, err
		}
		sent.Inc()
		if block.Header.Number == stopNum {
			return cb.Status_SUCCESS, nil
		}
	}
}

func (h *Handler) validateChannelHeader(chdr *cb.ChannelHeader) error {
	if chdr.Timestamp == nil {
		return errors.New("channel header in envelope must contain timestamp")
	}
	window := h.TimeWindow
	if window == 0 {
		window = DefaultTimeWindow
	}
	d := time.Since(chdr.Timestamp.AsTime())
	if d > window || d < -window {
		return fmt.Errorf("envelope timestamp %s is more than %s apart from current server time", chdr.Timestamp.AsTime(), window)
	}
	return nil
}
