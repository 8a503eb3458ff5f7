// Package broadcast serves AtomicBroadcast.Broadcast as Fabric 1.2 does:
// each stream is served by one goroutine that receives a message, validates
// it, hands it to the consenter and sends the response before it receives
// the next. A message that fails gets its status and ends the stream, as in
// every Fabric release; the server itself keeps serving.
//
// The per-message work is ProcessMessage and the routing step is the
// handler's Classify function, so a pooled ("parallel broadcast") or
// "send the transaction ID only" variant can replace one piece.
package broadcast

import (
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/orderer/channel"
	"fabricrepro/internal/orderer/metrics"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
)

// Classifier extracts what routing needs from an incoming envelope: its
// channel header. An error means the message is malformed (BAD_REQUEST).
type Classifier func(env *cb.Envelope) (*cb.ChannelHeader, error)

// ChannelHeader is the default Classifier, Fabric's utils.ChannelHeader:
// unmarshal the payload, require a header, unmarshal the channel header.
func ChannelHeader(env *cb.Envelope) (*cb.ChannelHeader, error) {
	payload := &cb.Payload{}
	if err := proto.Unmarshal(env.GetPayload(), payload); err != nil {
		return nil, fmt.Errorf("could not determine channel ID: bad payload: %w", err)
	}
	if payload.Header == nil {
		return nil, errors.New("could not determine channel ID: missing header")
	}
	chdr := &cb.ChannelHeader{}
	if err := proto.Unmarshal(payload.Header.ChannelHeader, chdr); err != nil {
		return nil, fmt.Errorf("could not determine channel ID: bad channel header: %w", err)
	}
	return chdr, nil
}

// Registrar finds a channel by ID (nil if the orderer does not serve it).
type Registrar interface {
	GetChain(channelID string) *channel.Support
}

// Handler serves Broadcast streams.
type Handler struct {
	Registrar Registrar
	Metrics   *metrics.Metrics
	Classify  Classifier // ChannelHeader if nil
}

// Stream is the server side of a Broadcast stream.
type Stream = ab.AtomicBroadcast_BroadcastServer

// Handle serves one stream until the client closes it or a message fails.
func (h *Handler) Handle(srv Stream) error {
	addr := remoteAddr(srv)
	for {
		msg, err := srv.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		resp := h.ProcessMessage(msg, addr)
		err = srv.Send(resp)
		if resp.Status != cb.Status_SUCCESS {
			return err
		}
		if err != nil {
			log.Printf("broadcast: error sending to %s: %v", addr, err)
			return err
		}
	}
}

// ProcessMessage validates one message and hands it to its channel's
// consenter, returning the response for the client. It never panics on
// malformed input.
func (h *Handler) ProcessMessage(msg *cb.Envelope, addr string) (resp *ab.BroadcastResponse) {
	start := time.Now()
	channelID, txType := "unknown", "unknown"
	validated := time.Duration(0)
	defer func() {
		if validated == 0 {
			validated = time.Since(start)
		}
		st := resp.Status.String()
		h.Metrics.BroadcastRequests.WithLabelValues(channelID, txType, st).Inc()
		h.Metrics.BroadcastValidateSeconds.WithLabelValues(channelID, st).Observe(validated.Seconds())
	}()

	classify := h.Classify
	if classify == nil {
		classify = ChannelHeader
	}
	chdr, err := classify(msg)
	if err != nil {
		log.Printf("broadcast: [channel: %s] could not get message processor for serving %s: %v", channelID, addr, err)
		return &ab.BroadcastResponse{Status: cb.Status_BAD_REQUEST, Info: err.Error()}
	}
	channelID, txType = chdr.ChannelId, cb.HeaderType(chdr.Type).String()

	ch := h.Registrar.GetChain(chdr.ChannelId)
	if ch == nil {
		// Fabric routes such a message to the system channel, which rejects
		// it with ErrChannelDoesNotExist (NOT_FOUND).
		return &ab.BroadcastResponse{Status: cb.Status_NOT_FOUND, Info: channel.ErrChannelDoesNotExist.Error()}
	}
	switch channel.ClassifyMsg(chdr) {
	case channel.ConfigMsg:
		return &ab.BroadcastResponse{Status: cb.Status_BAD_REQUEST, Info: "message is of type that cannot be processed directly"}
	case channel.ConfigUpdateMsg:
		return &ab.BroadcastResponse{Status: cb.Status_BAD_REQUEST, Info: "config updates are not supported by the reference orderer"}
	}

	configSeq, err := ch.ProcessNormalMsg(msg)
	if err != nil {
		log.Printf("broadcast: [channel: %s] rejecting broadcast of normal message from %s because of error: %v", channelID, addr, err)
		return &ab.BroadcastResponse{Status: ClassifyError(err), Info: err.Error()}
	}
	validated = time.Since(start)

	if err := ch.WaitReady(); err != nil {
		return &ab.BroadcastResponse{Status: cb.Status_SERVICE_UNAVAILABLE, Info: err.Error()}
	}
	if err := ch.Order(msg, configSeq); err != nil {
		return &ab.BroadcastResponse{Status: cb.Status_SERVICE_UNAVAILABLE, Info: err.Error()}
	}
	return &ab.BroadcastResponse{Status: cb.Status_SUCCESS}
}

// ClassifyError maps a validation error to a status as Fabric does.
func ClassifyError(err error) cb.Status {
	switch {
	case errors.Is(err, channel.ErrChannelDoesNotExist):
		return cb.Status_NOT_FOUND
	case errors.Is(err, channel.ErrPermissionDenied):
		return cb.Status_FORBIDDEN
	default:
		return cb.Status_BAD_REQUEST
	}
}

// remoteAddr names the client for log lines.

func remoteAddr(srv Stream) string {
	if p, ok := peer.FromContext(srv.Context()); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
