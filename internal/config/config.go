// Package config loads a command's YAML configuration strictly: an unknown key
// or a value of the wrong type is an error that names the key, so a typo in an
// experiment never silently falls back to a default.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is a configuration problem in a file, naming the offending key.
type Error struct {
	File string
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("config %s: %s", e.File, e.Msg) }

var (
	unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type`)
	wrongType    = regexp.MustCompile(`line (\d+): cannot unmarshal !!(\w+) ` + "`" + `([^` + "`" + `]*)` + "`" + ` into (\S+)`)
)

// Load reads path into out (a pointer to a struct with yaml tags), rejecting
// unknown keys and type mismatches. out should already hold the defaults.
func Load(path string, out any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return &Error{File: path, Msg: err.Error()}
	}
	return Parse(path, raw, out)
}

// Parse is Load on bytes already read; name is used in messages.
func Parse(name string, raw []byte, out any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return &Error{File: name, Msg: err.Error()}
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil && !errors.Is(err, errEOF(err)) {
		return &Error{File: name, Msg: explain(err.Error(), &doc)}
	}
	return nil
}

func errEOF(err error) error {
	if err != nil && err.Error() == "EOF" {
		return err
	}
	return nil
}

// explain turns yaml.v3's messages into ones that name the key path.
func explain(msg string, doc *yaml.Node) string {
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "yaml: unmarshal errors:"))
		if line == "" {
			continue
		}
		if m := unknownField.FindStringSubmatch(line); m != nil {
			parts = append(parts, fmt.Sprintf("unknown key %q at %s (line %s)", m[2], keyPath(doc, m[1], m[2]), m[1]))
		} else if m := wrongType.FindStringSubmatch(line); m != nil {
			parts = append(parts, fmt.Sprintf("key %s (line %s) has a %s value %q, expected %s", keyPathAtLine(doc, m[1]), m[1], m[2], m[3], m[4]))
		} else {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, "; ")
}

// keyPath finds the dotted path of key defined at line.
func keyPath(doc *yaml.Node, line, key string) string {
	var found string
	walk(doc, nil, func(path []string, k *yaml.Node) {
		if fmt.Sprint(k.Line) == line && k.Value == key {
			found = strings.Join(path, ".")
		}
	})
	if found == "" {
		return key
	}
	return found
}

// keyPathAtLine finds the dotted path of the key whose value is at line.
func keyPathAtLine(doc *yaml.Node, line string) string {
	var found string
	walk(doc, nil, func(path []string, k *yaml.Node) {
		if fmt.Sprint(k.Line) == line {
			found = strings.Join(path, ".")
		}
	})
	if found == "" {
		return "at line " + line
	}
	return found
}

func walk(n *yaml.Node, path []string, visit func([]string, *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walk(c, path, visit)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			p := append(append([]string{}, path...), k.Value)
			visit(p, k)
			walk(n.Content[i+1], p, visit)
		}
	}
}
