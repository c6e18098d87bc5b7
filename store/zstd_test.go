package store

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/parquet-go/parquet-go/compress/zstd"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestZstdSmallWindow: the codec lumina writes Parquet with compresses a
// page to the same bytes as parquet-go's ZSTD codec, which decodes them,
// and a fresh encoder with its first page allocates about 4 MiB where
// parquet-go's allocates 19 MiB (16 MiB of history an encoder whatever
// the page's size (the cause of
// `lumina export parquet`'s 52 MiB live heap).
func TestZstdSmallWindow(t *testing.T) {
	// A page as an export writes it: 256 KiB of increasing int64s (PSNs,
	// times) with repeats.
	page := make([]byte, 0, 256<<10)
	for i := 0; len(page) < cap(page); i++ {
		page = binary.LittleEndian.AppendUint64(page, uint64(i/3*1024+i%7))
	}
	var c *Zstd
	var got []byte
	ours := allocated(func() {
		var err error
		if c, err = NewZstd(); err != nil {
			t.Fatal(err)
		}
		got, _ = c.Encode(nil, page)
	})
	defer c.Close()
	theirs := &zstd.Codec{}
	var want []byte
	parquetGo := allocated(func() { want, _ = theirs.Encode(nil, page) })
	if !bytes.Equal(got, want) {
		t.Errorf("compressed page: %d bytes, parquet-go's %d bytes; want the same bytes", len(got), len(want))
	}
	back, err := theirs.Decode(nil, got)
	if err != nil || !bytes.Equal(back, page) {
		t.Errorf("parquet-go's decoder: %v, equal %v", err, bytes.Equal(back, page))
	}
	if ours > 6<<20 || parquetGo < 16<<20 {
		t.Errorf("a fresh encoder and one page allocate %d B (want at most 6 MiB); parquet-go's codec %d B (want at least its 16 MiB history)", ours, parquetGo)
	}
	t.Logf("one page: ours %d B, parquet-go's %d B allocated", ours, parquetGo)
}
