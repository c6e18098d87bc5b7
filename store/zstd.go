package store

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Zstd is parquet-go's ZSTD codec with a small window, for the results
// store's files and `lumina export parquet` (the same compressed bytes on
// lumina's files). parquet-go compresses each page as its own frame
// (EncodeAll), so a window larger than a page finds nothing more; its own
// codec keeps the zstd package's default 8 MiB window, whose history
// buffers (16 MiB an encoder, allocated whatever the page's size) were 32
// MiB of the 52 MiB live heap of `lumina export parquet` (heap profile
// before the writer's Close, at 0.13 M and 2.1 M packets alike). With a 1
// MiB window and the encoder's lower-memory mode a fresh encoder and its
// first page allocate about 4 MiB (19 MiB with parquet-go's codec;
// TestZstdSmallWindow), and the export's live heap is 20 MiB.
type Zstd struct {
	mu  sync.Mutex
	enc *zstd.Encoder
}

// zstdWindow is Zstd's window: 4 pages of parquet-go's default page
// buffer (parquet.DefaultPageBufferSize, 256 KiB).
const zstdWindow = 1 << 20

// NewZstd returns a codec with one encoder (its Encode is safe for
// concurrent use); Close releases it.
func NewZstd() (*Zstd, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(zstdWindow),
		zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	if err != nil {
		return nil, err
	}
	return &Zstd{enc: enc}, nil
}

// String names the codec as parquet-go's does.
func (*Zstd) String() string { return "ZSTD" }

// CompressionCodec is Parquet's ZSTD.
func (*Zstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

// Encode compresses src as one zstd frame.
func (c *Zstd) Encode(dst, src []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.EncodeAll(src, dst[:0]), nil
}

// Decode is parquet-go's (a writer does not decode).
func (*Zstd) Decode(dst, src []byte) ([]byte, error) { return parquet.Zstd.Decode(dst, src) }

// Close releases the encoder.
func (c *Zstd) Close() { c.enc.Close() }
