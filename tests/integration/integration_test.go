package integration

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"fabricrepro/internal/chaincode/lifecycle"
	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
	moneytransfer "fabricrepro/workloads/money-transfer"
)

const initialBalance = 1000

func testBatch() channelconfig.Batch {
	b := channelconfig.DefaultBatch
	b.MaxMessageCount = 100
	b.Timeout = 200 * time.Millisecond
	return b
}

// setup deploys money-transfer through lscc and creates n accounts.
func setup(t *testing.T, f *fabric, n int) {
	t.Helper()
	args, err := lifecycle.DeployArgs(moneytransfer.Name, "1.0", policy.SignedByAnyMember("Org1MSP"))
	if err != nil {
		t.Fatal(err)
	}
	envs, ids := f.endorseAll(lifecycle.Name, [][][]byte{args})
	f.broadcast(envs...)
	if c := f.watch.wait(t, ids, 30*time.Second); c[0] != pb.TxValidationCode_VALID {
		t.Fatalf("deploy: %s", c[0])
	}
	var create [][][]byte
	for i := 0; i < n; i++ {
		create = append(create, moneytransfer.CreateArgs(moneytransfer.AccountName(i), initialBalance, nil))
	}
	envs, ids = f.endorseAll(moneytransfer.Name, create)
	f.broadcast(envs...)
	for i, c := range f.watch.wait(t, ids, 60*time.Second) {
		if c != pb.TxValidationCode_VALID {
			t.Fatalf("create %d: %s", i, c)
		}
	}
}

func (f *fabric) balance(t *testing.T, acct string) int64 {
	t.Helper()
	prop, _, _ := protoutil.CreateChaincodeProposal(f.net.Channel, moneytransfer.Name, [][]byte{[]byte(moneytransfer.FuncBalance), []byte(acct)}, f.net.Client.Serialize())
	sp, _ := protoutil.SignProposal(prop, f.net.Client)
	resp, err := f.endorser.ProcessProposal(t.Context(), sp)
	if err != nil || resp.Response.GetStatus() != 200 {
		t.Fatalf("balance %s: %v %v", acct, err, resp.GetResponse())
	}
	b, err := strconv.ParseInt(string(resp.Response.Payload), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Thousands of transfers between disjoint pairs, in rounds that each wait
// for the previous one to commit: every transaction must be valid, blocks
// contiguous, and the balances exactly what the transfers imply.
func TestTransfersAllValid(t *testing.T) {
	const accounts, rounds = 200, 20
	f := startFabric(t, testBatch())
	setup(t, f, accounts)
	want := make([]int64, accounts)
	for i := range want {
		want[i] = initialBalance
	}
	rng := rand.New(rand.NewSource(1))
	total := 0
	for r := 0; r < rounds; r++ {
		perm := rng.Perm(accounts)
		var args [][][]byte
		for j := 0; j+1 < accounts; j += 2 {
			from, to := perm[j], perm[j+1]
			amt := int64(1 + rng.Intn(10))
			want[from] -= amt
			want[to] += amt
			args = append(args, moneytransfer.TransferArgs(moneytransfer.AccountName(from), moneytransfer.AccountName(to), amt, nil))
		}
		envs, ids := f.endorseAll(moneytransfer.Name, args)
		f.broadcast(envs...)
		for i, c := range f.watch.wait(t, ids, 60*time.Second) {
			if c != pb.TxValidationCode_VALID {
				t.Fatalf("round %d transfer %d: %s", r, i, c)
			}
		}
		total += len(ids)
	}
	t.Logf("%d transfers committed valid", total)
	blocks := f.watch.blockNumbers()
	for i, n := range blocks {
		if n != uint64(i+1) {
			t.Fatalf("block numbers not contiguous: %v", blocks)
		}
	}
	for i := 0; i < accounts; i++ {
		if got := f.balance(t, moneytransfer.AccountName(i)); got != want[i] {
			t.Fatalf("balance of %s = %d, want %d", moneytransfer.AccountName(i), got, want[i])
		}
	}
}

// Pairs of transfers endorsed against the same state and ordered one after
// the other: MVCC must accept the first of each pair and reject exactly the
// second with MVCC_READ_CONFLICT.
func TestConflictingTransfersMVCC(t *testing.T) {
	const pairs = 50
	f := startFabric(t, testBatch())
	setup(t, f, 2*pairs)
	var args [][][]byte
	for j := 0; j < pairs; j++ {
		a, b := moneytransfer.AccountName(2*j), moneytransfer.AccountName(2*j+1)
		args = append(args, moneytransfer.TransferArgs(a, b, 5, nil), moneytransfer.TransferArgs(b, a, 7, nil))
	}
	envs, ids := f.endorseAll(moneytransfer.Name, args)
	f.broadcast(envs...) // one stream: the orderer keeps this order
	codes := f.watch.wait(t, ids, 60*time.Second)
	for i, c := range codes {
		want := pb.TxValidationCode_VALID
		if i%2 == 1 {
			want = pb.TxValidationCode_MVCC_READ_CONFLICT
		}
		if c != want {
			t.Fatalf("tx %d: %s, want %s", i, c, want)
		}
	}
	for j := 0; j < pairs; j++ {
		if got := f.balance(t, moneytransfer.AccountName(2*j)); got != initialBalance-5 {
			t.Fatalf("account %d: %d", 2*j, got)
		}
	}
}

// A transaction whose endorsement signature was tampered with (and the
// envelope re-signed by the client) must be rejected by VSCC with
// ENDORSEMENT_POLICY_FAILURE; an honest one in the same batch stays valid.
func TestForgedEndorsementRejected(t *testing.T) {
	f := startFabric(t, testBatch())
	setup(t, f, 4)
	envs, ids := f.endorseAll(moneytransfer.Name, [][][]byte{
		moneytransfer.TransferArgs(moneytransfer.AccountName(0), moneytransfer.AccountName(1), 10, nil),
		moneytransfer.TransferArgs(moneytransfer.AccountName(2), moneytransfer.AccountName(3), 10, nil),
	})
	envs[0] = forge(t, f, envs[0])
	f.broadcast(envs...)
	codes := f.watch.wait(t, ids, 30*time.Second)
	if codes[0] != pb.TxValidationCode_ENDORSEMENT_POLICY_FAILURE || codes[1] != pb.TxValidationCode_VALID {
		t.Fatalf("codes %v, want [ENDORSEMENT_POLICY_FAILURE VALID]", codes)
	}
	if got := f.balance(t, moneytransfer.AccountName(0)); got != initialBalance {
		t.Fatalf("forged transfer changed the balance: %d", got)
	}
}

func forge(t *testing.T, f *fabric, env *cb.Envelope) *cb.Envelope {
	t.Helper()
	pl := &cb.Payload{}
	mustUnmarshal(t, env.Payload, pl)
	tx := &pb.Transaction{}
	mustUnmarshal(t, pl.Data, tx)
	cap := &pb.ChaincodeActionPayload{}
	mustUnmarshal(t, tx.Actions[0].Payload, cap)
	sig := cap.Action.Endorsements[0].Signature
	sig[len(sig)-4] ^= 0x5a
	tx.Actions[0].Payload = protoutil.MarshalOrPanic(cap)
	pl.Data = protoutil.MarshalOrPanic(tx)
	out := &cb.Envelope{Payload: protoutil.MarshalOrPanic(pl)}
	s, err := f.net.Client.Sign(out.Payload)
	if err != nil {
		t.Fatal(err)
	}
	out.Signature = s
	return out
}
