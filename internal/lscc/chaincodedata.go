// Package lscc holds what Fabric 1.2's lifecycle system chaincode (lscc)
// keeps in the world state: one ChaincodeData entry per deployed chaincode,
// under namespace "lscc" and the chaincode's name. The committer's VSCC reads
// the endorsement policy from there for every transaction, as Fabric does.
package lscc

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// Namespace is the lscc namespace in the state database.
const Namespace = "lscc"

// ChaincodeData mirrors Fabric's ccprovider.ChaincodeData, encoded with the
// same protobuf field numbers (name=1, version=2, escc=3, vscc=4, policy=5).
type ChaincodeData struct {
	Name    string
	Version string
	Escc    string
	Vscc    string
	Policy  []byte // a marshaled common.SignaturePolicyEnvelope
}

// Marshal encodes cd in protobuf wire format.
func (cd *ChaincodeData) Marshal() []byte {
	var b []byte
	for _, f := range []struct {
		num protowire.Number
		val []byte
	}{{1, []byte(cd.Name)}, {2, []byte(cd.Version)}, {3, []byte(cd.Escc)}, {4, []byte(cd.Vscc)}, {5, cd.Policy}} {
		if len(f.val) == 0 {
			continue
		}
		b = protowire.AppendTag(b, f.num, protowire.BytesType)
		b = protowire.AppendBytes(b, f.val)
	}
	return b
}

// Unmarshal decodes a ChaincodeData, skipping fields it does not know.
func Unmarshal(b []byte) (*ChaincodeData, error) {
	cd := &ChaincodeData{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errors.New("lscc: malformed ChaincodeData")
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, errors.New("lscc: malformed ChaincodeData")
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, errors.New("lscc: malformed ChaincodeData")
		}
		b = b[n:]
		switch num {
		case 1:
			cd.Name = string(v)
		case 2:
			cd.Version = string(v)
		case 3:
			cd.Escc = string(v)
		case 4:
			cd.Vscc = string(v)
		case 5:
			cd.Policy = append([]byte(nil), v...)
		}
	}
	return cd, nil
}
