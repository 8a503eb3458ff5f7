package validation

import (
	"os"
	"testing"

	"google.golang.org/protobuf/proto"

	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protos/ledger/rwset/kvrwset"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

type (
	kvrwsetKVRead  = kvrwset.KVRead
	kvrwsetKVWrite = kvrwset.KVWrite
)

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "validation-test-") }

func mustUnmarshal(t *testing.T, raw []byte, m proto.Message) {
	t.Helper()
	if err := proto.Unmarshal(raw, m); err != nil {
		t.Fatal(err)
	}
}

// forgeEndorsement rewrites the first endorsement of raw with edit and
// re-signs the envelope as the client, so that only the endorsement is bad.
func forgeEndorsement(t *testing.T, f *fixture, raw []byte, edit func(*pb.Endorsement)) []byte {
	t.Helper()
	env := &cb.Envelope{}
	mustUnmarshal(t, raw, env)
	pl := &cb.Payload{}
	mustUnmarshal(t, env.Payload, pl)
	tx := &pb.Transaction{}
	mustUnmarshal(t, pl.Data, tx)
	cap := &pb.ChaincodeActionPayload{}
	mustUnmarshal(t, tx.Actions[0].Payload, cap)
	edit(cap.Action.Endorsements[0])
	tx.Actions[0].Payload = protoutil.MarshalOrPanic(cap)
	pl.Data = protoutil.MarshalOrPanic(tx)
	env.Payload = protoutil.MarshalOrPanic(pl)
	sig, err := f.net.Client.Sign(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	env.Signature = sig
	return protoutil.MarshalOrPanic(env)
}

func forgeEnvelopeSig(t *testing.T, raw []byte) []byte {
	env := &cb.Envelope{}
	mustUnmarshal(t, raw, env)
	env.Signature = append([]byte{}, env.Signature...)
	env.Signature[len(env.Signature)-2] ^= 0x55
	return protoutil.MarshalOrPanic(env)
}
