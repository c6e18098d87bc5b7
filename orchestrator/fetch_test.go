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

	"github.com/netlumina/lumina/dumper"
	"github.com/netlumina/lumina/orchestrator/agent"
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

// stoppingDumper is a dumper whose Stop reports name and whose Fetch
// serves chunks, counting the Fetch calls.
type stoppingDumper struct {
	slowDumper
	fetches int
}

func (d *stoppingDumper) Stop(context.Context, *luminav1.DumperStopRequest, ...grpc.CallOption) (*luminav1.DumperStopResponse, error) {
	return &luminav1.DumperStopResponse{Report: agent.DumperReportToProto(dumper.Report{Name: "d0", Backend: "sim"})}, nil
}

func (d *stoppingDumper) Fetch(ctx context.Context, r *luminav1.FetchRequest, o ...grpc.CallOption) (grpc.ServerStreamingClient[luminav1.Chunk], error) {
	d.fetches++
	return d.slowDumper.Fetch(ctx, r, o...)
}

// TestStopDumperMove: on sim (move) a dumper file is renamed under the
// results directory, the same bytes and no Fetch; when the rename fails
// (another file system; here, no such file) and without move, it is
// copied through Fetch.
func TestStopDumperMove(t *testing.T) {
	dir := t.TempDir()
	remote, local := filepath.Join(dir, "spool", "d.pcap"), filepath.Join(dir, "results", "dumpers", "d.pcap")
	if err := os.MkdirAll(filepath.Dir(remote), 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(name string, d *stoppingDumper, rep dumper.Report, err error, want string, fetches int) {
		t.Helper()
		got, rerr := os.ReadFile(local)
		if err != nil || rerr != nil || string(got) != want || d.fetches != fetches || rep.Name != "d0" {
			t.Errorf("%s: error %v, %s holds %q (%v), %d fetches, report %q; want %q, %d fetches, report d0", name, err, local, got, rerr, d.fetches, rep.Name, want, fetches)
		}
	}
	for _, move := range []bool{true, false} {
		if err := os.WriteFile(remote, []byte("pcap bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
		d := &stoppingDumper{slowDumper: slowDumper{chunks: []string{"fetched"}}}
		rep, err := stopDumper(d, time.Second, remote, local, move)
		if move {
			check("move", d, rep, err, "pcap bytes", 0)
			if _, err := os.Stat(remote); !os.IsNotExist(err) {
				t.Errorf("move: %s still there (%v)", remote, err)
			}
		} else {
			check("copy", d, rep, err, "fetched", 1)
		}
	}
	os.Remove(remote)
	d := &stoppingDumper{slowDumper: slowDumper{chunks: []string{"fetched", " again"}}}
	rep, err := stopDumper(d, time.Second, remote, local, true)
	check("rename fails", d, rep, err, "fetched again", 1)
}
