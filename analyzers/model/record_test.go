package model

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/safefile"
)

// recordWithMessages is a `lumina run` report.json (indented, as the run
// writes it) whose generator.qps lists one completion time per message:
// msgs in all, over qps queue pairs.
func recordWithMessages(qps, msgs int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"valid\": true,\n  \"connections\": [{\"index\": 0, \"requester\": {\"ip\": \"10.0.0.1\", \"qpn\": 17}, \"responder\": {\"ip\": \"10.0.0.2\", \"qpn\": 18}}],\n")
	b.WriteString("  \"generator\": {\n    \"goodput_gbps\": 4.5,\n    \"qps\": [")
	for q := range qps {
		if q > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n      {\n        \"qp\": %d,\n        \"message_completion_ns\": [", q)
		for i := range msgs / qps {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n          %d", 1_000_000+i*8_193)
		}
		b.WriteString("\n        ],\n        \"messages\": 1\n      }")
	}
	b.WriteString("\n    ]\n  },\n  \"analysis\": {\"params\": {\"timestamp_uncertainty_ns\": 12}}\n}\n")
	return []byte(b.String())
}

// readRecordOf writes data to a file and returns ReadRecord's bytes.
func readRecordOf(t testing.TB, data []byte) ([]byte, error) {
	p := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return ReadRecord(p, safefile.MaxRecordSize, safefile.NoFollow)
}

// sameParse fails unless ParseMeta gives the same metadata and error for
// got (ReadRecord's bytes) as for the file's whole bytes.
func sameParse(t *testing.T, whole, got []byte) {
	t.Helper()
	mw, ew := ParseMeta(whole)
	mg, eg := ParseMeta(got)
	if fmt.Sprint(ew) != fmt.Sprint(eg) {
		t.Fatalf("error %v, whole file: %v", eg, ew)
	}
	if !reflect.DeepEqual(mw, mg) {
		t.Fatalf("metadata %+v, whole file: %+v", mg, mw)
	}
}

// TestReadRecord: the per-message lists of a run's report.json become [],
// nothing else changes; anything that is not a list of numbers at that
// place, or a file that is not valid JSON, is read whole.
func TestReadRecord(t *testing.T) {
	rec := recordWithMessages(2, 4)
	got, err := readRecordOf(t, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(string(rec), "[\n          1000000,\n          1008193\n        ]", "[]")
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	sameParse(t, rec, got)
	for _, in := range []string{
		`{"generator": {"qps": [{"message_completion_ns": [1, -2.5e+3, 0, 1E2 , 3]}]}}`,
		`{"generator": {"qps": [{"message_completion_ns": []}, {"message_completion_ns": [ ]}]}, "connections": null}`,
		`{"generator": {"qps": [{"message_completion_ns": [1, "x"]}]}}`,
		`{"generator": {"qps": [{"message_completion_ns": [01]}]}}`,
		`{"generator": {"qps": [{"message_completion_ns": [1,]}]}}`,
		`{"generator": {"qps": [{"message_completion_ns": [1 2]}]}}`,
		`{"generator": {"qps": [{"message_completion_ns": [1.]}]}}`,
		`{"generator": {"qps": [{"message_completion_ns": [1]}]}} x`,
		`{"generator": {"qps": [{"message_completion_ns": [1]}]}, "timeout": "x"}`,
		`{"generator": {"qps": [{"message_completion_ns": [1]}]}, "connections": [{"index": -1}]}`,
		`{"generator": {"qps": [{"message_completion_ns": [1`,
		`{"generator": {"qps": [{"message_completion_n\u0073": [1]}]}}`,
		`{"generator": {"qps": {"message_completion_ns": [1]}}}`,
		`{"x": "\"generator", "generator": {"qps": [{"message_completion_ns": [1]}]}}`,
		`[{"generator": {"qps": [{"message_completion_ns": [1]}]}}]`,
	} {
		got, err := readRecordOf(t, []byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		sameParse(t, []byte(in), got)
	}
}

// TestReadRecordRefuses: ReadRecord refuses what safefile.ReadFile
// refuses, with its errors.
func TestReadRecordRefuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.json")
	if err := os.WriteFile(p, recordWithMessages(1, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		limit int64
		o     safefile.Options
	}{{link, safefile.MaxRecordSize, safefile.NoFollow}, {dir, safefile.MaxRecordSize, safefile.Options{}},
		{p, 100, safefile.Options{}}, {filepath.Join(dir, "none.json"), safefile.MaxRecordSize, safefile.Options{}}} {
		_, want := safefile.ReadFile(c.path, c.limit, c.o)
		_, err := ReadRecord(c.path, c.limit, c.o)
		if want == nil || fmt.Sprint(err) != fmt.Sprint(want) {
			t.Errorf("%s: error %v, want %v", c.path, err, want)
		}
	}
	if _, err := ReadRecord(link, safefile.MaxRecordSize, safefile.NoFollow); !errors.Is(err, safefile.ErrSymlink) {
		t.Errorf("link: %v, want ErrSymlink", err)
	}
}

// TestLoadMetaMemory: the bytes allocated to load a run's report.json do
// not grow with its number of messages (issue #36, item 3): 100,000
// messages cost less than 64 KiB more than 1,000, where reading the file
// whole costs more than the file (1.9 MB).
func TestLoadMetaMemory(t *testing.T) {
	dir := t.TempDir()
	alloc := func(msgs int) uint64 {
		p := filepath.Join(dir, fmt.Sprintf("report%d.json", msgs))
		if err := os.WriteFile(p, recordWithMessages(8, msgs), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadMetaWith(p, safefile.NoFollow); err != nil { // warm
			t.Fatal(err)
		}
		return allocBytes(func() {
			if _, err := LoadMetaWith(p, safefile.NoFollow); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := alloc(1_000), alloc(100_000)
	t.Logf("allocated %d B at 1,000 messages, %d B at 100,000", small, large)
	if large > small+64<<10 {
		t.Errorf("loading 100,000 messages allocated %d B, 1,000 %d B: grows with the messages", large, small)
	}
}

// allocBytes is the bytes f allocates (runtime.MemStats.TotalAlloc), the
// least of 3 runs.
func allocBytes(f func()) uint64 {
	best := ^uint64(0)
	for range 3 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		best = min(best, b.TotalAlloc-a.TotalAlloc)
	}
	return best
}

func FuzzReadRecord(f *testing.F) {
	f.Add(recordWithMessages(2, 6))
	f.Add([]byte(`{"generator": {"qps": [{"message_completion_ns": [1, -2.5e+3]}]}, "timeout": 3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := filterRecord(bytes.NewReader(b), int64(len(b)), -1)
		if err != nil {
			t.Fatal(err)
		}
		sameParse(t, b, got)
	})
}

// TestReadRecordDeep: nesting past the lists' depth is followed without
// keeping it, and the lists are found after it.
func TestReadRecordDeep(t *testing.T) {
	deep := strings.Repeat(`{"a": [`, 2_000) + strings.Repeat(`]}`, 2_000)
	for _, in := range []string{
		`{"x": ` + deep + `, "generator": {"qps": [{"x": [[[[{"message_completion_ns": [1]}]]]], "message_completion_ns": [1, 2]}]}}`,
		`{"x": ` + deep + `}`,
	} {
		got, err := filterRecord(strings.NewReader(in), int64(len(in)), -1)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(in, `"message_completion_ns": [1, 2]`, `"message_completion_ns": []`, 1)
		if string(got) != want {
			t.Errorf("got %.80s…, want %.80s…", got[len(deep):], want[len(deep):])
		}
		sameParse(t, []byte(in), got)
	}
}
