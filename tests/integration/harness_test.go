// Package integration starts the reference orderer and peer as real
// processes on loopback and drives them over gRPC as clients would:
// endorse proposals on the peer, broadcast envelopes to the orderer, and
// watch commits through the peer's filtered Deliver service.
package integration

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/committer/txgen"
	cb "fabricrepro/internal/protos/common"
	ab "fabricrepro/internal/protos/orderer"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// bins builds bin/orderer and bin/peer from this checkout into a temporary
// directory, once per test binary.
func bins(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "integration-bin-")
		if buildErr != nil {
			return
		}
		for _, c := range []string{"orderer", "peer"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, c), "./cmd/"+c)
			cmd.Dir = "../.."
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", c, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs bin with --config cfg, logging to logPath, waits for the ready
// line and registers a cleanup that stops it (SIGTERM, then SIGKILL) and
// shows the log tail if the test failed.
func start(t *testing.T, bin, cfg, logPath string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			raw, _ := os.ReadFile(logPath)
			lines := strings.Split(string(raw), "\n")
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			t.Logf("--- %s (tail) ---\n%s", filepath.Base(logPath), strings.Join(lines, "\n"))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		raw, _ := os.ReadFile(logPath)
		if strings.Contains(string(raw), "Beginning to serve requests") {
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before becoming ready:\n%s", bin, raw)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s not ready after 30s", bin)
}

// fabric is a running orderer + peer with clients connected to both.
type fabric struct {
	t        *testing.T
	dir      string
	net      *txgen.Network
	peerAddr string
	ordAddr  string
	endorser pb.EndorserClient
	bcast    ab.AtomicBroadcastClient
	watch    *watcher
}

func startFabric(t *testing.T, batch channelconfig.Batch) *fabric {
	t.Helper()
	bin := bins(t)
	dir := t.TempDir()
	n, err := txgen.NewNetworkBatch(filepath.Join(dir, "crypto"), "mychannel", 1, batch)
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(dir, "genesis.block")
	if err := n.WriteGenesis(gen); err != nil {
		t.Fatal(err)
	}
	f := &fabric{t: t, dir: dir, net: n, peerAddr: freeAddr(t), ordAddr: freeAddr(t)}
	ordCfg := fmt.Sprintf(`orderer:
  listenAddress: %s
  metricsAddress: ""
  genesisBlock: %s
  mspDir: %s/crypto/ordererOrganizations/orderer.example.com/orderers/orderer0.orderer.example.com/msp
  mspID: OrdererMSP
`, f.ordAddr, gen, dir)
	peerCfg := fmt.Sprintf(`peer:
  listenAddress: %s
  metricsAddress: %s
  mspDir: %s/crypto/peerOrganizations/org1.example.com/peers/peer0.org1.example.com/msp
  mspID: Org1MSP
  genesisBlock: %s
  dataDir: %s/peer-data
  blockLog: %s/peer-blocks.csv
  orderer:
    address: %s
    reconnectDelay: 100ms
  validation:
    vsccWorkers: 2
  roles:
    endorser: true
    committer: true
`, f.peerAddr, freeAddr(t), dir, gen, dir, dir, f.ordAddr)
	for name, body := range map[string]string{"orderer.yaml": ordCfg, "peer.yaml": peerCfg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start(t, filepath.Join(bin, "orderer"), filepath.Join(dir, "orderer.yaml"), filepath.Join(dir, "orderer.log"))
	start(t, filepath.Join(bin, "peer"), filepath.Join(dir, "peer.yaml"), filepath.Join(dir, "peer.log"))
	f.endorser = pb.NewEndorserClient(dial(t, f.peerAddr))
	f.bcast = ab.NewAtomicBroadcastClient(dial(t, f.ordAddr))
	f.watch = newWatcher(t, f, dial(t, f.peerAddr))
	return f
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(100<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// endorse sends a signed proposal for cc(args) to the peer and assembles the
// client-signed transaction envelope.
func (f *fabric) endorse(cc string, args [][]byte) (*cb.Envelope, string, error) {
	prop, txID, err := protoutil.CreateChaincodeProposal(f.net.Channel, cc, args, f.net.Client.Serialize())
	if err != nil {
		return nil, "", err
	}
	sp, err := protoutil.SignProposal(prop, f.net.Client)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := f.endorser.ProcessProposal(ctx, sp)
	if err != nil {
		return nil, "", err
	}
	if resp.Response == nil || resp.Response.Status != 200 {
		return nil, "", fmt.Errorf("endorsement of %s failed: %v", txID, resp.Response)
	}
	env, err := protoutil.CreateSignedTx(prop, f.net.Client, resp)
	return env, txID, err
}

// endorseAll endorses many proposals with a few concurrent clients.
func (f *fabric) endorseAll(cc string, argsList [][][]byte) ([]*cb.Envelope, []string) {
	f.t.Helper()
	envs := make([]*cb.Envelope, len(argsList))
	ids := make([]string, len(argsList))
	errs := make(chan error, len(argsList))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, a := range argsList {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, a [][]byte) {
			defer func() { <-sem; wg.Done() }()
			env, id, err := f.endorse(cc, a)
			if err != nil {
				errs <- err
				return
			}
			envs[i], ids[i] = env, id
		}(i, a)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		f.t.Fatal(err)
	}
	return envs, ids
}

// broadcast sends envelopes in order on one stream, checking each ack.
func (f *fabric) broadcast(envs ...*cb.Envelope) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream, err := f.bcast.Broadcast(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		for range envs {
			resp, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			if resp.Status != cb.Status_SUCCESS {
				errc <- fmt.Errorf("broadcast status %s: %s", resp.Status, resp.Info)
				return
			}
		}
		errc <- nil
	}()
	for _, e := range envs {
		if err := stream.Send(e); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		f.t.Fatal(err)
	}
	stream.CloseSend()
}

// watcher records every filtered block the peer delivers.
type watcher struct {
	mu     sync.Mutex
	cond   *sync.Cond
	codes  map[string]pb.TxValidationCode
	blocks []uint64
	err    error
}

func newWatcher(t *testing.T, f *fabric, conn *grpc.ClientConn) *watcher {
	w := &watcher{codes: map[string]pb.TxValidationCode{}}
	w.cond = sync.NewCond(&w.mu)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := pb.NewDeliverClient(conn).DeliverFiltered(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seek := &ab.SeekInfo{
		Start:    &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: 1}}},
		Stop:     &ab.SeekPosition{Type: &ab.SeekPosition_Specified{Specified: &ab.SeekSpecified{Number: math.MaxUint64}}},
		Behavior: ab.SeekInfo_BLOCK_UNTIL_READY,
	}
	env, err := protoutil.SignedEnvelope(cb.HeaderType_DELIVER_SEEK_INFO, f.net.Channel, f.net.Client, seek)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(env); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			resp, err := stream.Recv()
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.cond.Broadcast()
				w.mu.Unlock()
				return
			}
			switch r := resp.Type.(type) {
			case *pb.DeliverResponse_FilteredBlock:
				w.blocks = append(w.blocks, r.FilteredBlock.Number)
				for _, tx := range r.FilteredBlock.FilteredTransactions {
					w.codes[tx.Txid] = tx.TxValidationCode
				}
			case *pb.DeliverResponse_Status:
				w.err = fmt.Errorf("deliver ended with status %s", r.Status)
			}
			w.cond.Broadcast()
			w.mu.Unlock()
		}
	}()
	return w
}

// wait returns the validation codes of ids once all are committed.
func (w *watcher) wait(t *testing.T, ids []string, timeout time.Duration) []pb.TxValidationCode {
	t.Helper()
	timer := time.AfterFunc(timeout, func() {
		w.mu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("timeout after %s", timeout)
		}
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		missing := 0
		for _, id := range ids {
			if _, ok := w.codes[id]; !ok {
				missing++
			}
		}
		if missing == 0 {
			out := make([]pb.TxValidationCode, len(ids))
			for i, id := range ids {
				out[i] = w.codes[id]
			}
			return out
		}
		if w.err != nil {
			t.Fatalf("waiting for %d of %d transactions: %v", missing, len(ids), w.err)
		}
		w.cond.Wait()
	}
}

func (w *watcher) blockNumbers() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]uint64(nil), w.blocks...)
}

// mustUnmarshal is proto.Unmarshal for data the test built itself.
func mustUnmarshal(t *testing.T, raw []byte, m proto.Message) {
	t.Helper()
	if err := proto.Unmarshal(raw, m); err != nil {
		t.Fatal(err)
	}
}

// TestMain removes the binaries built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
