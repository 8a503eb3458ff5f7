package channel

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/orderer/blockcutter"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
)

// Errors that broadcast maps to statuses (Fabric's msgprocessor errors).
var (
	// ErrChannelDoesNotExist maps to NOT_FOUND.
	ErrChannelDoesNotExist = errors.New("channel does not exist")
	// ErrPermissionDenied maps to FORBIDDEN.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrEmptyMessage is Fabric's EmptyRejectRule error (BAD_REQUEST).
	ErrEmptyMessage = errors.New("message was empty")
)

// Rule is one check of Fabric's standard channel filter set.
type Rule func(env *cb.Envelope) error

// emptyReject rejects an envelope without payload (Fabric's EmptyRejectRule).
func emptyReject(env *cb.Envelope) error {
	if len(env.Payload) == 0 {
		return ErrEmptyMessage
	}
	return nil
}

// sizeFilter rejects envelopes larger than AbsoluteMaxBytes, measured as
// payload plus signature as Fabric's MaxBytesRule does.
func sizeFilter(absoluteMax func() uint32) Rule {
	return func(env *cb.Envelope) error {
		max := absoluteMax()
		if size := blockcutter.MessageSize(env); size > max {
			return fmt.Errorf("message payload is %d bytes and exceeds maximum allowed %d bytes", size, max)
		}
		return nil
	}
}

// sigFilter checks that the envelope's creator signature satisfies a policy
// (Fabric's SigFilter with /Channel/Writers). An envelope whose signed data
// cannot be extracted is a bad request; a failed policy is FORBIDDEN.
func sigFilter(name string, p func() *policy.Policy) Rule {
	return func(env *cb.Envelope) error {
		sd, err := AsSignedData(env)
		if err != nil {
			return fmt.Errorf("could not convert message to signedData: %w", err)
		}
		if err := p().Evaluate([]policy.SignedData{sd}); err != nil {
			return fmt.Errorf("%w: failed evaluating policy %s: %v", ErrPermissionDenied, name, err)
		}
		return nil
	}
}

// AsSignedData is Fabric's Envelope.AsSignedData: the payload bytes signed by
// the creator named in the payload's signature header. It unmarshals the
// payload again, as Fabric does after the channel header was read.
func AsSignedData(env *cb.Envelope) (policy.SignedData, error) {
	payload := &cb.Payload{}
	if err := proto.Unmarshal(env.Payload, payload); err != nil {
		return policy.SignedData{}, err
	}
	if payload.Header == nil {
		return policy.SignedData{}, errors.New("missing Header")
	}
	shdr := &cb.SignatureHeader{}
	if err := proto.Unmarshal(payload.Header.SignatureHeader, shdr); err != nil {
		return policy.SignedData{}, fmt.Errorf("GetSignatureHeaderFromBytes failed: %w", err)
	}
	return policy.SignedData{Identity: shdr.Creator, Data: env.Payload, Signature: env.Signature}, nil
}

// applyRules runs rules in order and returns the first error.
func applyRules(rules []Rule, env *cb.Envelope) error {
	for _, r := range rules {
		if err := r(env); err != nil {
			return err
		}
	}
	return nil
}
