package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// gunzipFile returns the decompressed bytes of the gzip file at path
// (runtime/pprof's and go tool pprof -proto's profiles are gzipped
// protocol buffers).
func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: not a gzipped profile: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// TestDefaultPGO checks that default.pgo, the profile go build optimizes
// lumina with (scripts/pgo.sh), is a profile and still names the hot
// paths it was made for: a renamed or removed function there leaves the
// profile's samples of it unused, silently. Remake it with scripts/pgo.sh.
func TestDefaultPGO(t *testing.T) {
	b := gunzipFile(t, "default.pgo")
	for _, fn := range []string{
		"github.com/netlumina/lumina/analyzers.(*mainPass).packet",
		"github.com/netlumina/lumina/analyzers.(*mainPass).packetDecoded",
		"github.com/netlumina/lumina/analyzers.(*pipeline).observe",
		"github.com/netlumina/lumina/analyzers/model.(*Decoder).decodeFast",
		"github.com/netlumina/lumina/trace.(*Reader).ReadPacket",
		"github.com/netlumina/lumina/trace.(*Chunker).Next",
		"github.com/netlumina/lumina/sim.(*EventLoop).step",
	} {
		if !bytes.Contains(b, []byte(fn)) {
			t.Errorf("default.pgo has no sample of %s: remake it with scripts/pgo.sh", fn)
		}
	}
}
