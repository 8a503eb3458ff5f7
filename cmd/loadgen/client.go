package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

func dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(100<<20), grpc.MaxCallSendMsgSize(100<<20)))
}

// Endorsed is a transaction ready for the orderer.
type Endorsed struct {
	TxID     string
	Envelope *cb.Envelope
	// OwnStream sends it on a Broadcast stream of its own, opened and closed
	// around it, in its place of its stream's order: an envelope the orderer
	// will refuse (a bad creator), since a Fabric 1.x orderer answers a
	// refused envelope and then ends the stream
	// (orderer/common/broadcast/broadcast.go: return srv.Send(...)), which
	// would refuse every later transfer of that stream.
	OwnStream bool
}

// endorsers sends proposals to the peers and assembles transactions.
type endorsers struct {
	clients []pb.EndorserClient
	perTx   int
	channel string
	cc      string
	signer  protoutil.Signer
}

// endorse builds, signs and endorses transaction i (invoking args), then
// assembles the signed envelope. Transaction i goes to perTx consecutive
// endorsers starting at i*perTx (round-robin). mutation BadEndorsement
// corrupts the endorsement signatures before assembly, BadCreator the
// creator's envelope signature after it (a byte of its S value, so the DER
// still parses and only the verification fails); other kinds change nothing
// here (a stale read is made by the accounts it is given).
func (e *endorsers) endorse(ctx context.Context, i int, args [][]byte, mutation string) (Endorsed, error) {
	forge := mutation == BadEndorsement
	prop, txID, err := protoutil.CreateChaincodeProposal(e.channel, e.cc, args, e.signer.Serialize())
	if err != nil {
		return Endorsed{}, err
	}
	sp, err := protoutil.SignProposal(prop, e.signer)
	if err != nil {
		return Endorsed{}, err
	}
	resps := make([]*pb.ProposalResponse, e.perTx)
	for j := range resps {
		k := (i*e.perTx + j) % len(e.clients)
		r, err := e.clients[k].ProcessProposal(ctx, sp)
		if err != nil {
			return Endorsed{}, fmt.Errorf("endorser %d: %w", k, err)
		}
		if r.Response == nil || r.Response.Status < 200 || r.Response.Status >= 400 {
			msg := "no response"
			if r.Response != nil {
				msg = fmt.Sprintf("status %d: %s", r.Response.Status, r.Response.Message)
			}
			return Endorsed{}, fmt.Errorf("endorser %d refused tx %s: %s", k, txID, msg)
		}
		if forge && r.Endorsement != nil && len(r.Endorsement.Signature) > 0 {
			sig := append([]byte(nil), r.Endorsement.Signature...)
			sig[len(sig)/2] ^= 0xff
			r.Endorsement = &pb.Endorsement{Endorser: r.Endorsement.Endorser, Signature: sig}
		}
		resps[j] = r
	}
	env, err := protoutil.CreateSignedTx(prop, e.signer, resps...)
	if err != nil {
		return Endorsed{}, fmt.Errorf("tx %s: %w", txID, err)
	}
	if mutation == BadCreator && len(env.Signature) > 0 {
		sig := append([]byte(nil), env.Signature...)
		sig[len(sig)-1] ^= 0xff
		env = &cb.Envelope{Payload: env.Payload, Signature: sig}
	}
	return Endorsed{TxID: txID, Envelope: env}, nil
}

// endorseAll endorses n transactions with the given concurrency; argsOf(i)
// gives the arguments of transaction i, mutation(i) its mutation ("" none;
// see endorse). The first error stops the phase.
func (e *endorsers) endorseAll(ctx context.Context, n, concurrency int, argsOf func(int) [][]byte, mutation func(int) string) ([]Endorsed, error) {
	out := make([]Endorsed, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idx := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				en, err := e.endorse(ctx, i, argsOf(i), mutation(i))
				if err != nil {
					once.Do(func() { firstErr = err; cancel() })
					continue
				}
				out[i] = en
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case idx <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// broadcast sends txs to the orderers over `streams` Broadcast streams
// (transaction i on stream i % streams, stream k to orderer k % len). With
// rate > 0 transaction i is due at start + i/rate (start fixed once all
// streams are open) and is sent no earlier; with rate 0 each stream sends as
// fast as the orderer accepts and scheduled = submitted. The acknowledgment
// time is taken when the orderer's response arrives (responses come back in
// order per stream).
func broadcast(ctx context.Context, orderers []*grpc.ClientConn, streams int, txs []Endorsed, rate float64) []Record {
	recs := make([]Record, len(txs))
	for i, t := range txs {
		recs[i].TxID = t.TxID
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type stream struct {
		st  ab.AtomicBroadcast_BroadcastClient
		err error
	}
	sts := make([]stream, streams)
	for k := range sts {
		sts[k].st, sts[k].err = ab.NewAtomicBroadcastClient(orderers[k%len(orderers)]).Broadcast(ctx)
	}
	start := time.Now().UnixNano()
	var sched []int64
	if rate > 0 {
		sched = Schedule(len(txs), rate, start)
		for i := range recs {
			recs[i].Scheduled = sched[i]
		}
	}
	var wg sync.WaitGroup
	for k := range sts {
		if sts[k].err != nil {
			for i := k; i < len(txs); i += streams {
				recs[i].Status = "ERROR:" + oneLine(fmt.Sprintf("open broadcast stream: %v", sts[k].err))
			}
			continue
		}
		st := sts[k].st
		pending := make(chan int, len(txs)/streams+1) // never throttles the sender
		wg.Add(2)
		go func() { // sender
			defer wg.Done()
			defer close(pending)
			for i := k; i < len(txs); i += streams {
				if rate > 0 {
					if d := time.Until(time.Unix(0, sched[i])); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
						}
					}
				}
				if ctx.Err() != nil {
					recs[i].Status = "ERROR:" + oneLine(ctx.Err().Error())
					continue
				}
				now := time.Now().UnixNano()
				recs[i].Submitted = now
				if rate == 0 {
					recs[i].Scheduled = now
				}
				if txs[i].OwnStream {
					recs[i].Acked, recs[i].Status = sendAlone(ctx, orderers[k%len(orderers)], txs[i].Envelope)
					continue
				}
				if err := st.Send(txs[i].Envelope); err != nil {
					recs[i].Status = "ERROR:" + oneLine("send: "+err.Error())
					for j := i + streams; j < len(txs); j += streams {
						recs[j].Status = "ERROR:stream broken before send"
					}
					break
				}
				pending <- i
			}
			st.CloseSend()
		}()
		go func() { // receiver
			defer wg.Done()
			var broken error
			for i := range pending {
				if broken != nil {
					recs[i].Status = "ERROR:" + oneLine("no response: "+broken.Error())
					continue
				}
				resp, err := st.Recv()
				now := time.Now().UnixNano()
				if err != nil {
					if errors.Is(err, io.EOF) {
						err = errors.New("stream closed by orderer")
					}
					broken = err
					recs[i].Status = "ERROR:" + oneLine("no response: "+err.Error())
					continue
				}
				recs[i].Acked = now
				recs[i].Status = resp.Status.String()
			}
		}()
	}
	wg.Wait()
	for i := range recs {
		if recs[i].Status == "" {
			recs[i].Status = "ERROR:not sent"
		}
	}
	return recs
}

// sendAlone sends env on a Broadcast stream of its own and returns when and
// what the orderer answered (acked 0 and an ERROR: status if it did not).
func sendAlone(ctx context.Context, orderer *grpc.ClientConn, env *cb.Envelope) (acked int64, status string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := ab.NewAtomicBroadcastClient(orderer).Broadcast(ctx)
	if err != nil {
		return 0, "ERROR:" + oneLine(fmt.Sprintf("open broadcast stream: %v", err))
	}
	if err := st.Send(env); err != nil {
		return 0, "ERROR:" + oneLine("send: "+err.Error())
	}
	resp, err := st.Recv()
	if err != nil {
		return 0, "ERROR:" + oneLine("no response: "+err.Error())
	}
	st.CloseSend()
	return time.Now().UnixNano(), resp.Status.String()
}

// oneLine keeps a status usable as one CSV field.
func oneLine(s string) string {
	out := []rune{}
	for _, r := range s {
		switch r {
		case ',', '\n', '\r', '"':
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}
