package protoutil

import (
	"crypto/sha256"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"google.golang.org/protobuf/proto"

	cb "fabricrepro/internal/protos/common"
)

type asn1Header struct {
	Number       *big.Int
	PreviousHash []byte
	DataHash     []byte
}

// BlockHeaderBytes is Fabric's ASN.1 DER encoding of a block header: the bytes
// that are hashed to chain blocks and signed by the orderer.
func BlockHeaderBytes(h *cb.BlockHeader) []byte {
	b, err := asn1.Marshal(asn1Header{Number: new(big.Int).SetUint64(h.Number), PreviousHash: h.PreviousHash, DataHash: h.DataHash})
	if err != nil {
		panic(err) // a struct of big.Int and byte slices always encodes
	}
	return b
}

// BlockHeaderHash is SHA-256 of BlockHeaderBytes.
func BlockHeaderHash(h *cb.BlockHeader) []byte {
	s := sha256.Sum256(BlockHeaderBytes(h))
	return s[:]
}

// BlockDataHash is SHA-256 over the concatenated envelopes of a block.
func BlockDataHash(d *cb.BlockData) []byte {
	h := sha256.New()
	for _, e := range d.Data {
		h.Write(e)
	}
	return h.Sum(nil)
}

// NewBlock returns an empty block with Fabric's four metadata slots.
func NewBlock(number uint64, previousHash []byte) *cb.Block {
	return &cb.Block{
		Header:   &cb.BlockHeader{Number: number, PreviousHash: previousHash},
		Data:     &cb.BlockData{},
		Metadata: &cb.BlockMetadata{Metadata: make([][]byte, len(cb.BlockMetadataIndex_name))},
	}
}

// SignBlock fills the SIGNATURES metadata: the orderer signs
// value || signature header || header bytes, as Fabric 1.2 does.
func SignBlock(block *cb.Block, signer Signer, value []byte) error {
	shdr := MarshalOrPanic(&cb.SignatureHeader{Creator: signer.Serialize(), Nonce: NewNonce()})
	msg := concat(value, shdr, BlockHeaderBytes(block.Header))
	sig, err := signer.Sign(msg)
	if err != nil {
		return err
	}
	md := &cb.Metadata{Value: value, Signatures: []*cb.MetadataSignature{{SignatureHeader: shdr, Signature: sig}}}
	block.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES] = MarshalOrPanic(md)
	return nil
}

// BlockSignatures returns the signed data of a block's SIGNATURES metadata as
// (identity, signed bytes, signature) triples for policy evaluation.
func BlockSignatures(block *cb.Block) ([][3][]byte, error) {
	if block.Header == nil || block.Metadata == nil || len(block.Metadata.Metadata) <= int(cb.BlockMetadataIndex_SIGNATURES) {
		return nil, errors.New("block has no header or metadata")
	}
	md := &cb.Metadata{}
	if err := proto.Unmarshal(block.Metadata.Metadata[cb.BlockMetadataIndex_SIGNATURES], md); err != nil {
		return nil, fmt.Errorf("bad signature metadata: %w", err)
	}
	hdrBytes := BlockHeaderBytes(block.Header)
	var out [][3][]byte
	for _, s := range md.Signatures {
		shdr := &cb.SignatureHeader{}
		if err := proto.Unmarshal(s.SignatureHeader, shdr); err != nil {
			return nil, fmt.Errorf("bad signature header: %w", err)
		}
		out = append(out, [3][]byte{shdr.Creator, concat(md.Value, s.SignatureHeader, hdrBytes), s.Signature})
	}
	return out, nil
}

func concat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
