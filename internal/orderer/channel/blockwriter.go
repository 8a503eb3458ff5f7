package channel

import (
	"log"
	"sync"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/orderer/blockcutter"
	"fabricrepro/internal/orderer/ledger"
	"fabricrepro/internal/orderer/metrics"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// blockWriter creates, signs and appends blocks as Fabric 1.2's
// multichannel.BlockWriter does: CreateNextBlock chains on the last block
// handed to WriteBlock, and WriteBlock commits in a goroutine while holding
// a lock, so the consenter can assemble block N+1 while block N is signed
// and written, yet blocks reach the ledger strictly in order.
type blockWriter struct {
	channelID  string
	signer     protoutil.Signer
	ledger     ledger.Ledger
	metrics    *metrics.Metrics
	maxCount   func() uint32
	committing sync.Mutex
	lastBlock  *cb.Block // touched only by the consenter goroutine
	lastConfig uint64    // number of the last config block (the genesis block: no config updates yet)
	failed     func(error)
}

// CreateNextBlock marshals the envelopes into the block after lastBlock.
func (bw *blockWriter) CreateNextBlock(msgs []*cb.Envelope) *cb.Block {
	prev := protoutil.BlockHeaderHash(bw.lastBlock.Header)
	data := &cb.BlockData{Data: make([][]byte, len(msgs))}
	for i, m := range msgs {
		raw, err := proto.Marshal(m)
		if err != nil {
			// An envelope that was unmarshaled from the wire always marshals.
			log.Panicf("channel %s: could not marshal envelope: %v", bw.channelID, err)
		}
		data.Data[i] = raw
	}
	block := protoutil.NewBlock(bw.lastBlock.Header.Number+1, prev)
	block.Header.DataHash = protoutil.BlockDataHash(data)
	block.Data = data
	return block
}

// WriteBlock waits for the previous commit, then commits block in the
// background.
func (bw *blockWriter) WriteBlock(block *cb.Block, reason blockcutter.CutReason) {
	bw.committing.Lock()
	bw.lastBlock = block
	go func() {
		defer bw.committing.Unlock()
		bw.commit(block, reason)
	}()
}

// Flush waits for the commit in flight.
func (bw *blockWriter) Flush() {
	bw.committing.Lock()
	bw.committing.Unlock()
}

// commit adds the SIGNATURES and the signed LAST_CONFIG metadata (two
// orderer signatures per block, as Fabric 1.2) and appends the block.
func (bw *blockWriter) commit(block *cb.Block, reason blockcutter.CutReason) {
	if err := protoutil.SignBlock(block, bw.signer, nil); err != nil {
		bw.failed(err)
		return
	}
	if err := signLastConfig(block, bw.signer, bw.lastConfig); err != nil {
		bw.failed(err)
		return
	}
	if err := bw.ledger.Append(block); err != nil {
		bw.failed(err)
		return
	}
	m, ch := bw.metrics, bw.channelID
	n := len(block.Data.Data)
	bytes := 0
	for _, d := range block.Data.Data {
		bytes += len(d)
	}
	m.BlocksCut.WithLabelValues(ch, reason.String()).Inc()
	m.EnvelopesOrdered.WithLabelValues(ch).Add(float64(n))
	m.LedgerHeight.WithLabelValues(ch).Set(float64(block.Header.Number + 1))
	if max := bw.maxCount(); max > 0 {
		m.BatchFill.WithLabelValues(ch).Observe(float64(n) / float64(max))
	}
	m.BlockBytes.WithLabelValues(ch).Observe(float64(bytes))
}

// signLastConfig fills the LAST_CONFIG metadata with the index of the last
// config block, signed over value || signature header || header bytes, as
// Fabric 1.2's addLastConfigSignature does.
func signLastConfig(block *cb.Block, signer protoutil.Signer, lastConfig uint64) error {
	value := protoutil.MarshalOrPanic(&cb.LastConfig{Index: lastConfig})
	shdr := protoutil.MarshalOrPanic(&cb.SignatureHeader{Creator: signer.Serialize(), Nonce: protoutil.NewNonce()})
	hdr := protoutil.BlockHeaderBytes(block.Header)
	msg := make([]byte, 0, len(value)+len(shdr)+len(hdr))
	msg = append(append(append(msg, value...), shdr...), hdr...)
	sig, err := signer.Sign(msg)
	if err != nil {
		return err
	}
	block.Metadata.Metadata[cb.BlockMetadataIndex_LAST_CONFIG] = protoutil.MarshalOrPanic(&cb.Metadata{
		Value:      value,
		Signatures: []*cb.MetadataSignature{{SignatureHeader: shdr, Signature: sig}},
	})
	return nil
}
