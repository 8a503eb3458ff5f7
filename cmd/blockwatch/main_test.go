package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"fabricrepro/internal/config"
	"fabricrepro/internal/deliverclient"
	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"

	"google.golang.org/protobuf/proto"
)

// gappySource is a TEST DOUBLE for a peer's Deliver service: its first
// session skips block 2, later sessions serve from where they are asked.
type gappySource struct{ opens int }

func (g *gappySource) Open(_ context.Context, start uint64) (deliverclient.Stream, error) {
	g.opens++
	nums := []uint64{1, 3}
	if g.opens > 1 {
		nums = []uint64{start, start + 1, start + 2}
	}
	i := 0
	return streamFunc(func() (*cb.Block, error) {
		if i == len(nums) {
			return nil, io.EOF
		}
		b := protoutil.NewBlock(nums[i], nil)
		b.Data.Data = [][]byte{{1}, {2}}
		b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{0, 12}
		i++
		return b, nil
	}), nil
}

type streamFunc func() (*cb.Block, error)

func (f streamFunc) Recv() (*cb.Block, error) { return f() }

func TestWatchWritesEveryBlockOnce(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	n, err := watch(context.Background(), &gappySource{}, 1, 4, time.Millisecond, w, nil)
	if err != nil || n != 4 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if lines[0] != Header || len(lines) != 5 {
		t.Fatalf("csv:\n%s", buf.String())
	}
	for i, l := range lines[1:] {
		f := strings.Split(l, ",")
		if f[0] != []string{"1", "2", "3", "4"}[i] || f[2] != "2" || f[3] != "1" {
			t.Fatalf("row %d: %s", i, l)
		}
	}
}

func TestWatchTimeoutKeepsRows(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	n, err := watch(ctx, &gappySource{}, 1, 1000, time.Millisecond, w, nil)
	if !errors.Is(err, context.DeadlineExceeded) || n == 0 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	if got := strings.Count(buf.String(), "\n"); got != n+1 {
		t.Fatalf("%d lines for %d blocks: rows must be flushed as they arrive", got, n)
	}
}

func TestConfigIsStrict(t *testing.T) {
	cfg := Config{}
	err := config.Parse("bw.yaml", []byte("address: x\nstopafter: 3\n"), &cfg)
	if err == nil || !strings.Contains(err.Error(), "stopafter") {
		t.Fatalf("unknown key accepted: %v", err)
	}
	cfg = Config{Source: "peer"}
	if err := config.Parse("bw.yaml", []byte("address: x\nmspDir: d\nmspID: m\nchannel: c\nstartBlock: 5\nstopAfter: 3\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.check() == nil {
		t.Fatal("stopAfter before startBlock accepted")
	}
}

// TestChannelOfFabricChannelBlock: the watcher of an upstream Fabric network
// is given the channel's real block 0 (ImplicitMeta policies); only its
// channel ID is read.
func TestChannelOfFabricChannelBlock(t *testing.T) {
	cfg := Config{GenesisBlock: "../../internal/channelconfig/testdata/fabric-1.2-mychannel.block"}
	if ch, err := cfg.channel(); err != nil || ch != "mychannel" {
		t.Fatalf("channel %q, err %v", ch, err)
	}
	cfg.Channel = "other"
	if ch, _ := cfg.channel(); ch != "other" {
		t.Fatalf("channel %q: the configured channel comes first", ch)
	}
}

// envelope is a transaction envelope whose channel header carries txID.
func envelope(t *testing.T, txID string) []byte {
	t.Helper()
	chdr, err := proto.Marshal(&cb.ChannelHeader{Type: int32(cb.HeaderType_ENDORSER_TRANSACTION), ChannelId: "c", TxId: txID})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := proto.Marshal(&cb.Payload{Header: &cb.Header{ChannelHeader: chdr}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := proto.Marshal(&cb.Envelope{Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// txSource is a TEST DOUBLE of a peer serving one block of three
// transactions, the second invalidated by an MVCC conflict.
type txSource struct{ env [][]byte }

func (s txSource) Open(_ context.Context, start uint64) (deliverclient.Stream, error) {
	sent := false
	return streamFunc(func() (*cb.Block, error) {
		if sent {
			return nil, io.EOF
		}
		sent = true
		b := protoutil.NewBlock(start, nil)
		b.Data.Data = s.env
		b.Metadata.Metadata[cb.BlockMetadataIndex_TRANSACTIONS_FILTER] = []byte{
			byte(pb.TxValidationCode_VALID), byte(pb.TxValidationCode_MVCC_READ_CONFLICT), byte(pb.TxValidationCode_VALID)}
		return b, nil
	}), nil
}

func TestWatchRecordsEachTransactionIDAndCode(t *testing.T) {
	var blocks, txs bytes.Buffer
	w, txw := bufio.NewWriter(&blocks), bufio.NewWriter(&txs)
	src := txSource{env: [][]byte{envelope(t, "tx-a"), envelope(t, "tx-b"), {0xff, 0x01}}}
	if n, err := watch(context.Background(), src, 7, 7, time.Millisecond, w, txw); err != nil || n != 1 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	want := TxHeader + "\n7,0,tx-a,VALID\n7,1,tx-b,MVCC_READ_CONFLICT\n7,2,,VALID\n"
	if txs.String() != want {
		t.Fatalf("txs csv:\n%s\nwant:\n%s", txs.String(), want)
	}
	if rows := strings.Split(strings.TrimSpace(blocks.String()), "\n"); len(rows) != 2 || rows[0] != Header ||
		!strings.HasPrefix(rows[1], "7,") || strings.Split(rows[1], ",")[2] != "3" || strings.Split(rows[1], ",")[3] != "2" {
		t.Fatalf("the block CSV keeps its columns: %q", blocks.String())
	}
}

// chainSource is a TEST DOUBLE for an orderer's Deliver service: blocks 0..n-1 chained by their
// header hashes, each signed by `sigs` signers; tamper changes block 2's data after it was hashed.
type chainSource struct {
	n, sigs int
	tamper  bool
}

func (c *chainSource) Open(_ context.Context, start uint64) (deliverclient.Stream, error) {
	var blocks []*cb.Block
	var prev []byte
	for i := 0; i < c.n; i++ {
		b := protoutil.NewBlock(uint64(i), prev)
		b.Data.Data = [][]byte{{byte(i)}, {byte(i), 1}}
		b.Header.DataHash = protoutil.BlockDataHash(b.Data)
		md := &cb.Metadata{}
		for s := 0; s < c.sigs; s++ {
			md.Signatures = append(md.Signatures, &cb.MetadataSignature{Signature: []byte{byte(s)}})
		}
		b.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES] = protoutil.MarshalOrPanic(md)
		if c.tamper && i == 2 {
			b.Data.Data[0] = []byte{99}
		}
		prev = protoutil.BlockHeaderHash(b.Header)
		blocks = append(blocks, b)
	}
	i := int(start)
	return streamFunc(func() (*cb.Block, error) {
		if i >= len(blocks) {
			return nil, io.EOF
		}
		i++
		return blocks[i-1], nil
	}), nil
}

func chainRows(t *testing.T, src *chainSource) [][]string {
	t.Helper()
	var buf, chain bytes.Buffer
	w, cw := bufio.NewWriter(&buf), bufio.NewWriter(&chain)
	if _, err := watch(context.Background(), src, 0, uint64(src.n-1), time.Millisecond, w, nil, cw); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(chain.String()), "\n")
	if lines[0] != ChainHeader || len(lines) != src.n+1 {
		t.Fatalf("chain csv:\n%s", chain.String())
	}
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, strings.Split(l, ","))
	}
	return rows
}

// --chain-out: each row's previous hash is the row before's header hash, the data hash checks, and
// the signature count is the metadata's; a block whose data was changed after hashing shows 0.
func TestChainOutRecordsTheHashChain(t *testing.T) {
	rows := chainRows(t, &chainSource{n: 4, sigs: 3})
	for i, r := range rows {
		if r[0] != []string{"0", "1", "2", "3"}[i] || r[2] != "2" || r[3] != "1" || r[6] != "3" {
			t.Fatalf("row %d: %v", i, r)
		}
		if i > 0 && r[4] != rows[i-1][5] {
			t.Fatalf("row %d: previous hash %s is not block %d's header hash %s", i, r[4], i-1, rows[i-1][5])
		}
	}
	// negative control: a tampered block's data hash does not match its envelopes
	rows = chainRows(t, &chainSource{n: 4, sigs: 1, tamper: true})
	if rows[2][3] != "0" || rows[1][3] != "1" || rows[3][3] != "1" {
		t.Fatalf("tampered block 2 not flagged: %v", rows)
	}
}
