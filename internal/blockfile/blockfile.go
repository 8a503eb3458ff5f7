// Package blockfile reads the block files a Fabric 1.x peer or orderer writes
// (fsblkstorage's blockfile_NNNNNN) and checks the chain they hold.
//
// Fabric does not store a marshaled common.Block: each record is a varint
// length followed by its own encoding (common/ledger/blkstorage/fsblkstorage/
// block_serialization.go at v1.2.0): varint block number, data hash and
// previous hash as varint-length bytes, a varint count of envelopes each as
// varint-length bytes, then a varint count of metadata entries each as
// varint-length bytes. The reference build's block store
// (internal/ledger/blkstorage) frames a marshaled common.Block instead; Read
// takes a record in that form when it is not in Fabric's, and Check then
// proves the decoding right through the hashes.
package blockfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protowire"

	"google.golang.org/protobuf/proto"

	cb "fabricrepro/internal/protos/common"
	pb "fabricrepro/internal/protos/peer"
	"fabricrepro/internal/protoutil"
)

// maxRecord bounds a record's length, so a damaged file cannot ask for gigabytes.
const maxRecord = 1 << 31

// ErrCutRecord says a block file ends in a record cut short: its length
// prefix promises more bytes than the file holds. Fabric's own recovery
// drops such a record after a crash mid-append; a harness counting a run's
// blocks must not, since the blocks after it are then unknown.
var ErrCutRecord = errors.New("the file ends in a cut record")

// ReadFiles reads the blocks of each file, in the order given. An error names
// the file it came from.
func ReadFiles(paths []string) ([]*cb.Block, error) {
	var blocks []*cb.Block
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		bs, err := Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		blocks = append(blocks, bs...)
	}
	return blocks, nil
}

// Read decodes every complete block record of a Fabric block file. A record
// cut short at the end of the file returns the complete blocks before it and
// an error wrapping ErrCutRecord, naming how many bytes were missing.
func Read(r io.Reader) ([]*cb.Block, error) {
	br := bufio.NewReader(r)
	var blocks []*cb.Block
	for {
		n, err := readUvarint(br)
		if errors.Is(err, io.EOF) {
			return blocks, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return blocks, fmt.Errorf("record %d (after %d complete blocks): length prefix cut: %w",
				len(blocks), len(blocks), ErrCutRecord)
		}
		if err != nil {
			return blocks, err
		}
		if n > maxRecord {
			return blocks, fmt.Errorf("record %d: length %d is too large", len(blocks), n)
		}
		rec := make([]byte, n)
		if got, err := io.ReadFull(br, rec); err != nil {
			return blocks, fmt.Errorf("record %d (after %d complete blocks): %d of %d bytes: %w",
				len(blocks), len(blocks), got, n, ErrCutRecord)
		}
		b, err := decode(rec)
		if err != nil {
			if pbb, ok := decodeMarshaled(rec); ok {
				b, err = pbb, nil
			}
		}
		if err != nil {
			return blocks, fmt.Errorf("record %d: %w", len(blocks), err)
		}
		blocks = append(blocks, b)
	}
}

func readUvarint(r *bufio.Reader) (uint64, error) {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c, err := r.ReadByte()
		if err != nil {
			if shift > 0 && errors.Is(err, io.EOF) {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("varint overflows 64 bits")
}

// decode parses one record's body.
func decode(rec []byte) (*cb.Block, error) {
	d := decoder{buf: rec}
	b := &cb.Block{Header: &cb.BlockHeader{}, Data: &cb.BlockData{}, Metadata: &cb.BlockMetadata{}}
	b.Header.Number = d.varint()
	b.Header.DataHash = d.bytes()
	b.Header.PreviousHash = d.bytes()
	for i, n := 0, d.varint(); i < int(n) && d.err == nil; i++ {
		b.Data.Data = append(b.Data.Data, d.bytes())
	}
	for i, n := 0, d.varint(); i < int(n) && d.err == nil; i++ {
		b.Metadata.Metadata = append(b.Metadata.Metadata, d.bytes())
	}
	if d.err == nil && len(d.buf) != 0 {
		d.err = fmt.Errorf("%d bytes left after the metadata", len(d.buf))
	}
	return b, d.err
}

// decodeMarshaled parses a record of the reference block store: a
// marshaled common.Block.
func decodeMarshaled(rec []byte) (*cb.Block, bool) {
	b := &cb.Block{}
	if err := proto.Unmarshal(rec, b); err != nil || b.Header == nil {
		return nil, false
	}
	if b.Data == nil {
		b.Data = &cb.BlockData{}
	}
	if b.Metadata == nil {
		b.Metadata = &cb.BlockMetadata{}
	}
	return b, true
}

type decoder struct {
	buf []byte
	err error
}

func (d *decoder) varint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := protowire.ConsumeVarint(d.buf)
	if n < 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) bytes() []byte {
	if d.err != nil {
		return nil
	}
	v, n := protowire.ConsumeBytes(d.buf)
	if n < 0 {
		d.err = errors.New("bad length-prefixed bytes")
		return nil
	}
	d.buf = d.buf[n:]
	return append([]byte(nil), v...)
}

// ValidCount is the number of transactions the block's transaction filter
// (metadata TRANSACTIONS_FILTER, one validation code per transaction) marks VALID.
func ValidCount(b *cb.Block) int {
	idx := int(cb.BlockMetadataIndex_TRANSACTIONS_FILTER)
	if b.Metadata == nil || len(b.Metadata.Metadata) <= idx {
		return 0
	}
	n := 0
	for _, code := range b.Metadata.Metadata[idx] {
		if code == 0 { // peer.TxValidationCode_VALID
			n++
		}
	}
	return n
}

// Tx is one transaction of a block with the code its committer gave it.
type Tx struct {
	Index int
	// TxID is the envelope's channel-header transaction ID; empty when the
	// header has none (e.g. a genesis config transaction) or does not decode.
	TxID string
	Code pb.TxValidationCode
}

// CodeName is the TxValidationCode's enum name (VALID, MVCC_READ_CONFLICT,
// ...), or the number for a code the enum does not know.
func (t Tx) CodeName() string {
	if n, ok := pb.TxValidationCode_name[int32(t.Code)]; ok {
		return n
	}
	return fmt.Sprint(int32(t.Code))
}

// Txs lists the block's transactions with their codes from the
// TRANSACTIONS_FILTER metadata. A block without a filter (an orderer's block,
// or one its committer never validated) or with a filter shorter than its
// data gives NOT_VALIDATED to the transactions it does not cover.
func Txs(b *cb.Block) []Tx {
	var filter []byte
	idx := int(cb.BlockMetadataIndex_TRANSACTIONS_FILTER)
	if b.Metadata != nil && len(b.Metadata.Metadata) > idx {
		filter = b.Metadata.Metadata[idx]
	}
	out := make([]Tx, len(b.Data.Data))
	for i, raw := range b.Data.Data {
		t := Tx{Index: i, Code: pb.TxValidationCode_NOT_VALIDATED}
		if i < len(filter) {
			t.Code = pb.TxValidationCode(filter[i])
		}
		env := &cb.Envelope{}
		if proto.Unmarshal(raw, env) == nil {
			if _, chdr, _, err := protoutil.UnmarshalPayload(env); err == nil {
				t.TxID = chdr.TxId
			}
		}
		out[i] = t
	}
	return out
}

// Check verifies the chain: block numbers consecutive from the first one,
// each header's data hash over its envelopes, each previous hash equal to the
// hash of the block before.
func Check(blocks []*cb.Block) error {
	for i, b := range blocks {
		if !bytes.Equal(b.Header.DataHash, protoutil.BlockDataHash(b.Data)) {
			return fmt.Errorf("block %d: data hash does not match its envelopes", b.Header.Number)
		}
		if i == 0 {
			continue
		}
		prev := blocks[i-1]
		if b.Header.Number != prev.Header.Number+1 {
			return fmt.Errorf("block %d follows block %d", b.Header.Number, prev.Header.Number)
		}
		if !bytes.Equal(b.Header.PreviousHash, protoutil.BlockHeaderHash(prev.Header)) {
			return fmt.Errorf("block %d: previous hash is not block %d's header hash", b.Header.Number, prev.Header.Number)
		}
	}
	return nil
}
