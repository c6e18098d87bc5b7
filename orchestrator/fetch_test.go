package orchestrator

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	luminav1 "github.com/netlumina/lumina/proto/luminav1"
)

// slowDumper serves Fetch as chunks with a gap before each; after the
// chunks it stalls forever if stall, else ends the stream.
type slowDumper struct {
	luminav1.DumperClient
	chunks []string
	gap    time.Duration
	stall  bool
}

func (d *slowDumper) Fetch(ctx context.Context, _ *luminav1.FetchRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[luminav1.Chunk], error) {
	return &slowStream{ctx: ctx, d: d}, nil
}

type slowStream struct {
	grpc.ClientStream
	ctx context.Context
	d   *slowDumper
	i   int
}

func (s *slowStream) Recv() (*luminav1.Chunk, error) {
	if s.i == len(s.d.chunks) && !s.d.stall {
		return nil, io.EOF
	}
	wait := s.d.gap
	if s.i == len(s.d.chunks) {
		wait = time.Hour
	}
	select {
	case <-time.After(wait):
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
	s.i++
	return &luminav1.Chunk{Data: []byte(s.d.chunks[s.i-1])}, nil
}

// TestFetchIdle: a dumper file's copy has no overall deadline, only one
// without data: six chunks 250 ms apart arrive with a 1 s idle limit (1.5 s
// in all), and a copy that stops sending fails after the idle limit,
// saying so.
func TestFetchIdle(t *testing.T) {
	local := filepath.Join(t.TempDir(), "d.pcap")
	d := &slowDumper{chunks: []string{"ab", "cd", "ef", "gh", "ij", "kl"}, gap: 250 * time.Millisecond}
	if err := fetch(d, "/remote/d.pcap", local, time.Second); err != nil {
		t.Fatalf("fetch of a slow but steady copy: %v", err)
	}
	if b, _ := os.ReadFile(local); string(b) != "abcdefghijkl" {
		t.Errorf("copied %q, want abcdefghijkl", b)
	}
	d.stall = true
	start := time.Now()
	err := fetch(d, "/remote/d.pcap", local, time.Second)
	if err == nil || !strings.Contains(err.Error(), "no data for 1s") {
		t.Errorf("fetch of a stalled copy = %v, want an error saying no data for 1s", err)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("the stalled copy took %v to fail", el)
	}
}
