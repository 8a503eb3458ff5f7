package txverify

import (
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"fabricrepro/internal/channelconfig"
	"fabricrepro/internal/crypto"
	"fabricrepro/internal/msp"
	cb "fabricrepro/internal/protos/common"
	mspproto "fabricrepro/internal/protos/msp"
	"fabricrepro/internal/protoutil"
)

// Membership is what a channel's configuration gives the verifier: its
// organizations' MSPs (root CAs, intermediate CAs), which of them are
// application organizations, and the channel's name.
type Membership struct {
	Channel     string
	MSPs        map[string]*msp.MSP
	Application []string // application organizations' MSP IDs, sorted
	Skipped     []string // MSPs of a kind this verifier does not read (idemix)
}

// IDs lists the MSP IDs, sorted.
func (m *Membership) IDs() []string { return slices.Sorted(maps.Keys(m.MSPs)) }

// Manager is a fresh msp.Manager over the membership's MSPs.
func (m *Membership) Manager() *msp.Manager {
	var all []*msp.MSP
	for _, id := range m.IDs() {
		all = append(all, m.MSPs[id])
	}
	return msp.NewManager(all...)
}

// merge adds other's MSPs (replacing those of the same ID) and application
// organizations.
func (m *Membership) merge(other *Membership) {
	if m.MSPs == nil {
		m.MSPs = map[string]*msp.MSP{}
	}
	for id, x := range other.MSPs {
		m.MSPs[id] = x
	}
	seen := map[string]bool{}
	for _, id := range m.Application {
		seen[id] = true
	}
	for _, id := range other.Application {
		if !seen[id] {
			m.Application = append(m.Application, id)
			seen[id] = true
		}
	}
	sort.Strings(m.Application)
	m.Skipped = append(m.Skipped, other.Skipped...)
	if m.Channel == "" {
		m.Channel = other.Channel
	}
}

// configEnvelope takes a CONFIG transaction apart: its channel header and
// its configuration.
func configEnvelope(raw []byte) (*cb.ChannelHeader, *cb.SignatureHeader, *cb.Config, error) {
	env := &cb.Envelope{}
	if err := proto.Unmarshal(raw, env); err != nil {
		return nil, nil, nil, fmt.Errorf("envelope: %w", err)
	}
	payload, chdr, shdr, err := protoutil.UnmarshalPayload(env)
	if err != nil {
		return nil, nil, nil, err
	}
	if chdr.Type != int32(cb.HeaderType_CONFIG) {
		return chdr, shdr, nil, fmt.Errorf("header type %s, not CONFIG", cb.HeaderType(chdr.Type))
	}
	ce := &cb.ConfigEnvelope{}
	if err := proto.Unmarshal(payload.Data, ce); err != nil {
		return chdr, shdr, nil, fmt.Errorf("config envelope: %w", err)
	}
	if ce.Config == nil || ce.Config.ChannelGroup == nil {
		return chdr, shdr, nil, errors.New("config envelope holds no channel group")
	}
	return chdr, shdr, ce.Config, nil
}

// MembershipFromConfigBlock reads the MSPs of a block holding one CONFIG
// transaction (a channel's genesis block, or a later configuration block):
// every organization group of the configuration tree (Orderer, Application,
// Consortiums) with an "MSP" value. It reads Fabric's config blocks, whose
// policies are ImplicitMeta, as well as the reference build's.
func MembershipFromConfigBlock(b *cb.Block) (*Membership, error) {
	if b == nil || b.Data == nil || len(b.Data.Data) != 1 {
		return nil, errors.New("a config block holds exactly one transaction")
	}
	chdr, _, cfg, err := configEnvelope(b.Data.Data[0])
	if err != nil {
		return nil, err
	}
	m, err := membershipFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	m.Channel = chdr.ChannelId
	return m, nil
}

func membershipFromConfig(cfg *cb.Config) (*Membership, error) {
	m := &Membership{MSPs: map[string]*msp.MSP{}}
	var walk func(path []string, g *cb.ConfigGroup) error
	walk = func(path []string, g *cb.ConfigGroup) error {
		if v := g.Values[channelconfig.MSPKey]; v != nil {
			x, skipped, err := mspFromConfigValue(v.Value)
			if err != nil {
				return fmt.Errorf("MSP of %s: %w", strings.Join(path, "/"), err)
			}
			if skipped != "" {
				m.Skipped = append(m.Skipped, skipped)
			} else {
				m.MSPs[x.ID] = x
				if len(path) == 2 && path[0] == channelconfig.ApplicationGroup {
					m.Application = append(m.Application, x.ID)
				}
			}
		}
		names := make([]string, 0, len(g.Groups))
		for n := range g.Groups {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if err := walk(append(append([]string{}, path...), n), g.Groups[n]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil, cfg.ChannelGroup); err != nil {
		return nil, err
	}
	sort.Strings(m.Application)
	if len(m.MSPs) == 0 {
		return nil, errors.New("the configuration names no MSP")
	}
	return m, nil
}

// mspFromConfigValue builds an MSP from a marshaled MSPConfig of type
// FABRIC (0); an idemix MSP (type 1) is named in skipped instead.
func mspFromConfigValue(raw []byte) (*msp.MSP, string, error) {
	mc := &mspproto.MSPConfig{}
	if err := proto.Unmarshal(raw, mc); err != nil {
		return nil, "", err
	}
	if mc.Type != 0 {
		return nil, fmt.Sprintf("MSP of type %d", mc.Type), nil
	}
	fc := &mspproto.FabricMSPConfig{}
	if err := proto.Unmarshal(mc.Config, fc); err != nil {
		return nil, "", err
	}
	x, err := newMSP(fc.Name, fc.RootCerts, fc.IntermediateCerts)
	return x, "", err
}

// newMSP is msp.New over the root CAs plus every intermediate CA that
// chains to one of them (checked here, at the intermediate's own validity
// start, as Fabric validates MSP certificates): an identity issued by a
// valid intermediate then verifies as it does in Fabric.
func newMSP(id string, roots, intermediates [][]byte) (*msp.MSP, error) {
	if id == "" {
		return nil, errors.New("MSP without a name")
	}
	pool, err := certPool(roots)
	if err != nil {
		return nil, fmt.Errorf("msp %s: root cert: %w", id, err)
	}
	anchors := append([][]byte{}, roots...)
	inter, err := certPool(intermediates)
	if err != nil {
		return nil, fmt.Errorf("msp %s: intermediate cert: %w", id, err)
	}
	for _, p := range intermediates {
		c, _ := crypto.ParseCertificatePEM(p)
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: c.NotBefore.Add(time.Second),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return nil, fmt.Errorf("msp %s: intermediate CA %q does not chain to a root: %w", id, c.Subject.CommonName, err)
		}
		anchors = append(anchors, p)
	}
	return msp.New(id, anchors)
}

// MembershipFromDir reads MSPs given on the command line (--msp-dir):
//
//   - MSPID=DIR: DIR is one organization's MSP directory (cacerts/, and
//     intermediatecerts/ if any), or an organization directory holding msp/;
//   - DIR of this repository's cryptogen (ordererOrganizations/ and
//     peerOrganizations/, each organization with its mspid file and
//     ca/ca-cert.pem), or one organization directory of it;
//   - DIR of Fabric's cryptogen (crypto-config: <kind>Organizations/<domain>/msp):
//     Fabric's layout does not store the MSP ID, so the sample networks'
//     convention names it: a peer organization "<First label of the
//     domain, capitalised>MSP" (org1.example.com → Org1MSP), an orderer
//     organization OrdererMSP. Give MSPID=DIR where that does not hold.
func MembershipFromDir(arg string) (*Membership, error) {
	if id, dir, ok := strings.Cut(arg, "="); ok && id != "" && !strings.ContainsRune(id, os.PathSeparator) {
		x, err := mspFromDir(id, dir)
		if err != nil {
			return nil, err
		}
		return &Membership{MSPs: map[string]*msp.MSP{id: x}, Application: []string{id}}, nil
	}
	dir := arg
	m := &Membership{MSPs: map[string]*msp.MSP{}}
	if isFile(filepath.Join(dir, "mspid")) {
		return orgDir(dir, true)
	}
	found := false
	for _, kind := range []string{"ordererOrganizations", "peerOrganizations"} {
		entries, err := os.ReadDir(filepath.Join(dir, kind))
		if err != nil {
			continue
		}
		found = true
		var orderers []string
		for _, e := range entries {
			orgPath := filepath.Join(dir, kind, e.Name())
			if !e.IsDir() {
				continue
			}
			if isFile(filepath.Join(orgPath, "mspid")) {
				o, err := orgDir(orgPath, kind == "peerOrganizations")
				if err != nil {
					return nil, err
				}
				m.merge(o)
				continue
			}
			id := "OrdererMSP"
			if kind == "peerOrganizations" {
				label, _, _ := strings.Cut(e.Name(), ".")
				id = strings.ToUpper(label[:1]) + label[1:] + "MSP"
			} else {
				orderers = append(orderers, e.Name())
			}
			x, err := mspFromDir(id, orgPath)
			if err != nil {
				return nil, err
			}
			o := &Membership{MSPs: map[string]*msp.MSP{id: x}}
			if kind == "peerOrganizations" {
				o.Application = []string{id}
			}
			m.merge(o)
		}
		if len(orderers) > 1 {
			return nil, fmt.Errorf("%s: %d orderer organizations of Fabric's layout (%s): name their MSP IDs with MSPID=DIR",
				dir, len(orderers), strings.Join(orderers, ", "))
		}
	}
	if !found {
		if isDir(filepath.Join(dir, "cacerts")) {
			return nil, fmt.Errorf("%s is an MSP directory, which does not name its MSP ID: give MSPID=%s", dir, dir)
		}
		return nil, fmt.Errorf("%s: neither a crypto directory (ordererOrganizations/, peerOrganizations/) nor an MSP directory", dir)
	}
	if len(m.MSPs) == 0 {
		return nil, fmt.Errorf("%s holds no organization", dir)
	}
	return m, nil
}

// orgDir reads one organization of this repository's cryptogen layout.
func orgDir(dir string, application bool) (*Membership, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "mspid"))
	if err != nil {
		return nil, err
	}
	id := strings.TrimSpace(string(raw))
	ca, err := os.ReadFile(filepath.Join(dir, "ca", "ca-cert.pem"))
	if err != nil {
		return nil, fmt.Errorf("organization %s: %w", dir, err)
	}
	x, err := newMSP(id, [][]byte{ca}, nil)
	if err != nil {
		return nil, err
	}
	m := &Membership{MSPs: map[string]*msp.MSP{id: x}}
	if application {
		m.Application = []string{id}
	}
	return m, nil
}

// mspFromDir reads an MSP directory of Fabric's layout (cacerts/*.pem,
// intermediatecerts/*.pem), or an organization directory with one in msp/,
// or one of this repository's organization directories (ca/ca-cert.pem).
func mspFromDir(id, dir string) (*msp.MSP, error) {
	if !isDir(filepath.Join(dir, "cacerts")) {
		switch {
		case isDir(filepath.Join(dir, "msp", "cacerts")):
			dir = filepath.Join(dir, "msp")
		case isFile(filepath.Join(dir, "ca", "ca-cert.pem")):
			ca, err := os.ReadFile(filepath.Join(dir, "ca", "ca-cert.pem"))
			if err != nil {
				return nil, err
			}
			return newMSP(id, [][]byte{ca}, nil)
		default:
			return nil, fmt.Errorf("%s: no cacerts/ (not an MSP directory)", dir)
		}
	}
	roots, err := pemFiles(filepath.Join(dir, "cacerts"))
	if err != nil {
		return nil, err
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("%s/cacerts holds no certificate", dir)
	}
	inter, err := pemFiles(filepath.Join(dir, "intermediatecerts"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return newMSP(id, roots, inter)
}

func pemFiles(dir string) ([][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !isFile(p) {
			continue
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

func isFile(p string) bool { st, err := os.Stat(p); return err == nil && st.Mode().IsRegular() }
func isDir(p string) bool  { st, err := os.Stat(p); return err == nil && st.IsDir() }

// certPool is a pool of the PEM certificates.
func certPool(pems [][]byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, p := range pems {
		c, err := crypto.ParseCertificatePEM(p)
		if err != nil {
			return nil, err
		}
		pool.AddCert(c)
	}
	return pool, nil
}
