package nodecmd

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"fabricrepro/internal/config"
)

// fakeNode serves until Stop; serving is closed when Serve is entered.
type fakeNode struct {
	serving chan struct{}
	stopped chan struct{}
	once    sync.Once
	stops   atomic.Int32
	err     error
}

func newFake() *fakeNode {
	return &fakeNode{serving: make(chan struct{}), stopped: make(chan struct{})}
}

func (n *fakeNode) Serve() error {
	close(n.serving)
	if n.err != nil {
		return n.err
	}
	<-n.stopped
	return nil
}

func (n *fakeNode) Stop() {
	n.stops.Add(1)
	n.once.Do(func() { close(n.stopped) })
}

type fakeConfig struct{ path string }

func loadOK(path string) (fakeConfig, error) { return fakeConfig{path}, nil }

// captureLog sends the log package's output to a buffer for the test and
// restores its settings afterwards (Run sets the flags and prefix).
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	w, flags, prefix := log.Writer(), log.Flags(), log.Prefix()
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(w); log.SetFlags(flags); log.SetPrefix(prefix) })
	return &buf
}

// logLine matches a whole log line of Run's: the prefix, the UTC time to
// the microsecond, and msg.
func logLine(msg string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^fake \d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{6} ` + regexp.QuoteMeta(msg) + `$`)
}

func TestConfigErrorExits2(t *testing.T) {
	captureLog(t)
	started := false
	load := func(path string) (fakeConfig, error) {
		if path != "x.yaml" {
			t.Errorf("load(%q), want the --config value x.yaml", path)
		}
		return fakeConfig{}, fmt.Errorf("loading: %w", &config.Error{File: path, Msg: "line 3: unknown key foo"})
	}
	start := func(fakeConfig) (*fakeNode, error) { started = true; return newFake(), nil }
	if code := Run("fake", []string{"fake", "--config", "x.yaml"}, load, start); code != 2 {
		t.Fatalf("exit code %d on a configuration error, want 2", code)
	}
	if started {
		t.Fatal("node started after a configuration error")
	}
}

func TestExitCodes(t *testing.T) {
	failLoad := func(string) (fakeConfig, error) { return fakeConfig{}, errors.New("open x.yaml: no such file") }
	failStart := func(fakeConfig) (*fakeNode, error) { return nil, errors.New("listen: address in use") }
	failServe := func(fakeConfig) (*fakeNode, error) {
		n := newFake()
		n.err = errors.New("accept: boom")
		return n, nil
	}
	for _, c := range []struct {
		name  string
		args  []string
		load  func(string) (fakeConfig, error)
		start func(fakeConfig) (*fakeNode, error)
		code  int
		log   string
	}{
		{"other load error", []string{"fake"}, failLoad, failStart, 1, ""},
		{"start error", []string{"fake"}, loadOK, failStart, 1, "cannot start: listen: address in use"},
		{"serve error", []string{"fake"}, loadOK, failServe, 1, "serve: accept: boom"},
		{"unknown flag", []string{"fake", "--nope"}, loadOK, failStart, 2, ""},
		{"help", []string{"fake", "-h"}, loadOK, failStart, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf := captureLog(t)
			if code := Run("fake", c.args, c.load, c.start); code != c.code {
				t.Fatalf("exit code %d, want %d", code, c.code)
			}
			if c.log != "" && !logLine(c.log).MatchString(buf.String()) {
				t.Fatalf("log %q lacks %q", buf, c.log)
			}
		})
	}
}

func TestSIGTERMStopsCleanly(t *testing.T) {
	buf := captureLog(t)
	n := newFake()
	var path string
	load := func(p string) (fakeConfig, error) { path = p; return fakeConfig{p}, nil }
	start := func(fakeConfig) (*fakeNode, error) { return n, nil }
	code := make(chan int, 1)
	go func() { code <- Run("fake", []string{"fake"}, load, start) }()

	// Run installs its signal handler before it calls Serve, so once the
	// node serves, SIGTERM goes to Run rather than ending the test binary.
	select {
	case <-n.serving:
	case c := <-code:
		t.Fatalf("Run returned %d before serving", c)
	case <-time.After(10 * time.Second):
		t.Fatal("node not serving after 10s")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code %d after SIGTERM, want 0", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return 10s after SIGTERM")
	}
	if path != "fake.yaml" {
		t.Errorf("default config path %q, want fake.yaml", path)
	}
	out := buf.String()
	for _, want := range []string{"received terminated, shutting down", "stopped"} {
		if !logLine(want).MatchString(out) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if i, j := strings.Index(out, "shutting down"), strings.Index(out, "stopped"); i > j {
		t.Errorf("log %q: stopped before shutting down", out)
	}
	if n.stops.Load() == 0 {
		t.Error("node not stopped")
	}
}
