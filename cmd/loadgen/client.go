package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

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

// ordering is the ordering service loadgen broadcasts to. With toAll (a BFT
// service, Fabric v3's SmartBFT) every envelope goes to every orderer and is
// acknowledged when a quorum of them answered SUCCESS, as Fabric v3.1's
// gateway submits (internal/pkg/gateway/submit.go, submitBFT); otherwise
// Broadcast stream k goes to orderer k % len and its answer is the ack.
type ordering struct {
	conns []*grpc.ClientConn
	toAll bool
}

// targets are the orderers stream k sends to and how many SUCCESS answers
// acknowledge an envelope.
func (o ordering) targets(k int) ([]*grpc.ClientConn, int) {
	if !o.toAll {
		return []*grpc.ClientConn{o.conns[k%len(o.conns)]}, 1
	}
	return o.conns, bftQuorum(len(o.conns))
}

// bftQuorum is ceil((n+f+1)/2) with f = floor((n-1)/3), the quorum Fabric's
// gateway waits for (computeBFTQuorum): 3 of 4 orderers.
func bftQuorum(n int) int {
	f := (n - 1) / 3
	return (n + f + 2) / 2
}

// tally collects one envelope's answers from its orderers.
type tally struct {
	successes, answers int
	failure            string
}

// broadcast sends txs to the ordering service over `streams` Broadcast
// streams (transaction i on stream i % streams; see ordering for where a
// stream goes). With rate > 0 transaction i is due at start + i/rate (start
// fixed once all streams are open) and is sent no earlier; with rate 0 each
// stream sends as fast as the orderers accept and scheduled = submitted. The
// acknowledgment time is taken when the answer completing the quorum arrives,
// or for a refused envelope when the last orderer answered (responses come
// back in order per stream and orderer); an envelope no orderer answered has
// none.
func broadcast(ctx context.Context, ord ordering, streams int, txs []Endorsed, rate float64) []Record {
	recs := make([]Record, len(txs))
	tallies := make([]tally, len(txs))
	var mu sync.Mutex // guards recs[i].Acked/Status and tallies once sent
	for i, t := range txs {
		recs[i].TxID = t.TxID
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// answer records orderer's answer to transaction i (status "" = none).
	answer := func(i, quorum, of int, status string) {
		mu.Lock()
		defer mu.Unlock()
		t := &tallies[i]
		t.answers++
		if status == "SUCCESS" {
			t.successes++
			if t.successes == quorum {
				recs[i].Acked, recs[i].Status = time.Now().UnixNano(), status
			}
		} else if t.failure == "" {
			t.failure = status
		}
		if t.answers == of && t.successes < quorum {
			recs[i].Status = t.failure
			if !strings.HasPrefix(t.failure, "ERROR:") { // the orderers answered: the refusal's time
				recs[i].Acked = time.Now().UnixNano()
			}
		}
	}
	type sub struct {
		st      ab.AtomicBroadcast_BroadcastClient
		conn    *grpc.ClientConn
		pending chan int
	}
	subs := make([][]sub, streams)
	quorums := make([]int, streams)
	var openErr []error
	for k := range subs {
		conns, quorum := ord.targets(k)
		quorums[k] = quorum
		var err error
		for _, c := range conns {
			var st ab.AtomicBroadcast_BroadcastClient
			if st, err = ab.NewAtomicBroadcastClient(c).Broadcast(ctx); err != nil {
				break
			}
			subs[k] = append(subs[k], sub{st: st, conn: c, pending: make(chan int, len(txs)/streams+1)})
		}
		openErr = append(openErr, err)
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
	for k := range subs {
		if openErr[k] != nil {
			for i := k; i < len(txs); i += streams {
				recs[i].Status = "ERROR:" + oneLine(fmt.Sprintf("open broadcast stream: %v", openErr[k]))
			}
			continue
		}
		k, quorum, of := k, quorums[k], len(subs[k])
		wg.Add(1)
		go func() { // sender
			defer wg.Done()
			defer func() {
				for _, s := range subs[k] {
					close(s.pending)
					s.st.CloseSend()
				}
			}()
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
					mu.Lock()
					recs[i].Status = "ERROR:" + oneLine(ctx.Err().Error())
					mu.Unlock()
					continue
				}
				now := time.Now().UnixNano()
				mu.Lock()
				recs[i].Submitted = now
				if rate == 0 {
					recs[i].Scheduled = now
				}
				mu.Unlock()
				if txs[i].OwnStream {
					for _, s := range subs[k] {
						answer(i, quorum, of, sendAlone(ctx, s.conn, txs[i].Envelope))
					}
					continue
				}
				for _, s := range subs[k] {
					if err := s.st.Send(txs[i].Envelope); err != nil {
						answer(i, quorum, of, "ERROR:"+oneLine("send: "+err.Error()))
						continue
					}
					s.pending <- i
				}
			}
		}()
		for _, s := range subs[k] {
			wg.Add(1)
			go func() { // receiver of one orderer's answers
				defer wg.Done()
				var broken error
				for i := range s.pending {
					if broken != nil {
						answer(i, quorum, of, "ERROR:"+oneLine("no response: "+broken.Error()))
						continue
					}
					resp, err := s.st.Recv()
					if err != nil {
						if errors.Is(err, io.EOF) {
							err = errors.New("stream closed by orderer")
						}
						broken = err
						answer(i, quorum, of, "ERROR:"+oneLine("no response: "+err.Error()))
						continue
					}
					answer(i, quorum, of, resp.Status.String())
				}
			}()
		}
	}
	wg.Wait()
	for i := range recs {
		if recs[i].Status == "" {
			recs[i].Status = "ERROR:not sent"
		}
	}
	return recs
}

// sendAlone sends env on a Broadcast stream of its own and returns what the
// orderer answered (an ERROR: status if it did not).
func sendAlone(ctx context.Context, orderer *grpc.ClientConn, env *cb.Envelope) string {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := ab.NewAtomicBroadcastClient(orderer).Broadcast(ctx)
	if err != nil {
		return "ERROR:" + oneLine(fmt.Sprintf("open broadcast stream: %v", err))
	}
	if err := st.Send(env); err != nil {
		return "ERROR:" + oneLine("send: "+err.Error())
	}
	resp, err := st.Recv()
	if err != nil {
		return "ERROR:" + oneLine("no response: "+err.Error())
	}
	st.CloseSend()
	return resp.Status.String()
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
