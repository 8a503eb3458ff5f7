package main

// Workload "envelopes": an ordering-service benchmark's client (Sousa et al.'s WorkloadClient,
// DSN 2018 Sec. VI-C, on Fabric's own orderers). No peer and no chaincode: each transaction is an
// envelope of header type ENDORSER_TRANSACTION whose payload data is transfer.payloadBytes opaque
// bytes (BFT-SMaRt's WorkloadClient sends MESSAGE; v3.1's SmartBFT puts no other type in a block
// with other envelopes: "only endorser transactions can be sent with other transactions",
// orderer/consensus/smartbft/verifier.go:174, and no orderer parses an endorser transaction's data), with a
// channel header (channel, a transaction ID computed as Fabric computes it from nonce and creator,
// a timestamp) and a signature header (the client's identity and nonce), signed by the client. That
// is all an orderer checks of a normal message: the header, the creator's signature against the
// channel's Writers policy and the size (orderer/common/msgprocessor StandardChannel filters); a
// SmartBFT orderer also derives the request ID from nonce and creator. The envelopes are made and
// signed before the timed section, then sent as the transfers are (broadcast: streams, rate, BFT to
// every orderer with a quorum's acknowledgement), each row of txs.csv one envelope.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// EnvelopesWorkload is the workload name of the ordering benchmark.
const EnvelopesWorkload = "envelopes"

// messageEnvelope makes one signed envelope of type ENDORSER_TRANSACTION whose payload data is data.
func messageEnvelope(channel string, signer protoutil.Signer, data []byte) (Endorsed, error) {
	creator := signer.Serialize()
	nonce := protoutil.NewNonce()
	txID := protoutil.ComputeTxID(nonce, creator)
	chdr := &cb.ChannelHeader{Type: int32(cb.HeaderType_ENDORSER_TRANSACTION), ChannelId: channel, TxId: txID,
		Timestamp: timestamppb.Now()}
	hdr := &cb.Header{ChannelHeader: protoutil.MarshalOrPanic(chdr),
		SignatureHeader: protoutil.MarshalOrPanic(&cb.SignatureHeader{Creator: creator, Nonce: nonce})}
	payload := protoutil.MarshalOrPanic(&cb.Payload{Header: hdr, Data: data})
	sig, err := signer.Sign(payload)
	if err != nil {
		return Endorsed{}, err
	}
	return Endorsed{TxID: txID, Envelope: &cb.Envelope{Payload: payload, Signature: sig}}, nil
}

// makeEnvelopes signs n envelopes of size payload bytes each, on every core. Each envelope's data
// starts with its index (8 bytes, big-endian, as far as size allows) then filler, so that no two
// are equal even before the nonce.
func makeEnvelopes(ctx context.Context, channel string, signer protoutil.Signer, n, size int) ([]Endorsed, error) {
	out := make([]Endorsed, n)
	errs := make([]error, n)
	filler := padding(size)
	var wg sync.WaitGroup
	workers := runtime.NumCPU()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				data := append([]byte(nil), filler...)
				for b := 0; b < 8 && b < size; b++ {
					data[b] = byte(uint64(i) >> (56 - 8*b))
				}
				out[i], errs[i] = messageEnvelope(channel, signer, data)
			}
		}(w)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("envelope %d: %w", i, err)
		}
	}
	return out, nil
}

// sendEnvelopes is the envelopes workload's transfer phase: sign every envelope, then send them all.
func sendEnvelopes(ctx context.Context, cfg *Config, channel string, signer protoutil.Signer, orderers ordering) ([]Record, *Summary, error) {
	t := cfg.Transfer
	began := time.Now()
	txs, err := makeEnvelopes(ctx, channel, signer, t.Transactions, t.PayloadBytes)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "loadgen: signed %d envelopes of %d data bytes (%d bytes each) in %s\n", len(txs),
		t.PayloadBytes, proto.Size(txs[0].Envelope), time.Since(began).Round(time.Millisecond))
	recs := broadcast(ctx, orderers, cfg.Streams, txs, t.Rate)
	s := Summarize(recs, t.Rate)
	return recs, &s, ctx.Err()
}
