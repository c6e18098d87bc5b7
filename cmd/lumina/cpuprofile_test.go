package main

import (
	"compress/gzip"
	"io"
	"os"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
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

// profileStrings checks that b is a profile in pprof's wire format (a
// protocol buffer message, github.com/google/pprof's proto/profile.proto:
// samples are field 2, the string table field 6) and returns its number of
// samples and its strings.
func profileStrings(t *testing.T, b []byte) (samples int, strs map[string]bool) {
	t.Helper()
	strs = map[string]bool{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("not a profile: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 2 && typ == protowire.BytesType:
			samples++
		case num == 6 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				t.Fatalf("not a profile: %v", protowire.ParseError(n))
			}
			strs[string(v)] = true
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			t.Fatalf("not a profile: field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return samples, strs
}

// TestDefaultPGO checks default.pgo, the profile go build optimizes
// lumina with (scripts/pgo.sh): that it is a profile of more than a few samples (a file
// the compiler cannot read fails every build of lumina), and that it
// still names the hot paths it was made for (a function renamed or
// removed there leaves the profile's samples of it unused, silently).
// Remake it with scripts/pgo.sh.
func TestDefaultPGO(t *testing.T) {
	samples, strs := profileStrings(t, gunzipFile(t, "default.pgo"))
	if samples < 100 {
		t.Errorf("default.pgo has %d samples (distinct stacks), want at least 100: remake it with scripts/pgo.sh", samples)
	}
	for _, fn := range []string{
		"github.com/netlumina/lumina/analyzers.(*mainPass).packet",
		"github.com/netlumina/lumina/analyzers.(*mainPass).packetDecoded",
		"github.com/netlumina/lumina/analyzers.(*pipeline).observe",
		"github.com/netlumina/lumina/analyzers/model.(*Decoder).decodeFast",
		"github.com/netlumina/lumina/trace.(*Reader).ReadPacket",
		"github.com/netlumina/lumina/trace.(*Chunker).Next",
		"github.com/netlumina/lumina/sim.(*EventLoop).step",
	} {
		if !strs[fn] {
			t.Errorf("default.pgo has no sample of %s: remake it with scripts/pgo.sh", fn)
		}
	}
}
