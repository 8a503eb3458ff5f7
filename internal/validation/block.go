package validation

import (
	"bytes"
	"errors"
	"fmt"

	"fabricrepro/internal/policy"
	cb "fabricrepro/internal/protos/common"
	"fabricrepro/internal/protoutil"
)

// VerifyBlock is what Fabric 1.2's message crypto service checks before a
// block delivered by the orderer may be committed: the data hash matches the
// data, and the SIGNATURES metadata satisfies the channel's BlockValidation
// policy.
func VerifyBlock(block *cb.Block, blockValidation *policy.Policy) error {
	if block == nil || block.Header == nil || block.Data == nil || block.Metadata == nil {
		return errors.New("block is missing header, data or metadata")
	}
	if !bytes.Equal(block.Header.DataHash, protoutil.BlockDataHash(block.Data)) {
		return fmt.Errorf("block %d: header data hash does not match the data", block.Header.Number)
	}
	triples, err := protoutil.BlockSignatures(block)
	if err != nil {
		return fmt.Errorf("block %d: %w", block.Header.Number, err)
	}
	sigs := make([]policy.SignedData, len(triples))
	for i, t := range triples {
		sigs[i] = policy.SignedData{Identity: t[0], Data: t[1], Signature: t[2]}
	}
	if err := blockValidation.Evaluate(sigs); err != nil {
		return fmt.Errorf("block %d: BlockValidation policy: %w", block.Header.Number, err)
	}
	return nil
}
