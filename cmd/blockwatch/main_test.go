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
	"fabricrepro/internal/protoutil"
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
	n, err := watch(context.Background(), &gappySource{}, 1, 4, time.Millisecond, w)
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
	n, err := watch(ctx, &gappySource{}, 1, 1000, time.Millisecond, w)
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
