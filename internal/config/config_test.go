package config

import (
	"strings"
	"testing"
	"time"
)

type sample struct {
	Peer struct {
		ID         string        `yaml:"id"`
		Workers    int           `yaml:"vsccWorkers"`
		Timeout    time.Duration `yaml:"timeout"`
		Validation struct {
			Enabled bool `yaml:"enabled"`
		} `yaml:"validation"`
	} `yaml:"peer"`
}

func TestUnknownKeyIsNamedWithItsPath(t *testing.T) {
	var s sample
	err := Parse("peer.yaml", []byte("peer:\n  id: p0\n  validation:\n    enabeld: true\n"), &s)
	if err == nil || !strings.Contains(err.Error(), `unknown key "enabeld" at peer.validation.enabeld`) {
		t.Fatalf("got %v", err)
	}
}

func TestWrongTypeNamesKeyAndExpectedType(t *testing.T) {
	var s sample
	err := Parse("peer.yaml", []byte("peer:\n  vsccWorkers: many\n"), &s)
	if err == nil || !strings.Contains(err.Error(), "peer.vsccWorkers") || !strings.Contains(err.Error(), "expected int") {
		t.Fatalf("got %v", err)
	}
}

func TestValidConfigKeepsDefaults(t *testing.T) {
	var s sample
	s.Peer.Workers = 7
	if err := Parse("peer.yaml", []byte("peer:\n  id: p0\n  timeout: 2s\n"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Peer.ID != "p0" || s.Peer.Workers != 7 || s.Peer.Timeout != 2*time.Second {
		t.Fatalf("got %+v", s)
	}
}

func TestEmptyFileIsValid(t *testing.T) {
	var s sample
	if err := Parse("empty.yaml", []byte(""), &s); err != nil {
		t.Fatal(err)
	}
}
