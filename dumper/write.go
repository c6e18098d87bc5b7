package dumper

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/netlumina/lumina/trace"
)

// mergeFanIn is the most sorted runs one merge pass reads at once; with
// more (a capture far out of order), runs are merged in passes through
// intermediate files, so memory stays bounded (mergeFanIn read buffers).
const mergeFanIn = 256

// mergeReadBuf is each run's read buffer during a merge.
const mergeReadBuf = 64 << 10

// finish turns the workers' spool files into the pcap at path, in mirror
// sequence order, atomically (a temp file in the same directory, fsync,
// rename, fsync of the directory), and removes the spools. One worker whose
// file is one sorted run (the common case) is renamed into place, without
// copying; otherwise the sorted runs of every worker are k-way merged by
// sequence number, in passes of at most mergeFanIn runs.
func finish(path string, snaplen int, spools []*spool) (err error) {
	defer func() {
		for _, s := range spools {
			s.remove()
		}
	}()
	for _, s := range spools {
		if err := s.flush(); err != nil {
			return fmt.Errorf("write pcap: %w", err)
		}
	}
	dir := filepath.Dir(path)
	if len(spools) == 1 && len(spools[0].runs) <= 1 {
		s := spools[0]
		if err := publish(s.f, s.path, path); err != nil {
			return fmt.Errorf("write pcap: %w", err)
		}
		s.f = nil
		syncDir(dir)
		return nil
	}
	// One switch (every copy of switch 0, as in a one-switch run): the
	// runs merge directly, without trace.Merge's per-switch split.
	oneSwitch := true
	for _, s := range spools {
		oneSwitch = oneSwitch && s.seen&^1 == 0
	}
	var srcs []runSource
	for _, s := range spools {
		for i, r := range s.runs {
			end := s.off
			if i+1 < len(s.runs) {
				end = s.runs[i+1].off
			}
			srcs = append(srcs, runSource{r: s.f, off: r.off, end: end})
		}
	}
	var tmps []*os.File
	defer func() {
		for _, f := range tmps {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for len(srcs) > mergeFanIn {
		var next []runSource
		for i := 0; i < len(srcs); i += mergeFanIn {
			group := srcs[i:min(i+mergeFanIn, len(srcs))]
			f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".merge-*")
			if err != nil {
				return fmt.Errorf("write pcap: %w", err)
			}
			tmps = append(tmps, f)
			end, err := mergeRuns(f, snaplen, group, oneSwitch)
			if err != nil {
				return fmt.Errorf("write pcap: %w", err)
			}
			next = append(next, runSource{r: f, off: pcapHeaderLen, end: end})
		}
		srcs = next
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write pcap: %w", err)
	}
	if _, err := mergeRuns(f, snaplen, srcs, oneSwitch); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write pcap: %w", err)
	}
	if err := publish(f, f.Name(), path); err != nil {
		return fmt.Errorf("write pcap: %w", err)
	}
	syncDir(dir)
	return nil
}

// runSource is one sorted run: the pcap records of r from off to end.
type runSource struct {
	r        io.ReaderAt
	off, end int64
}

// mergeRuns writes a pcap header and the records of srcs, merged by
// sequence number, to f; it returns the file's length.
func mergeRuns(f *os.File, snaplen int, srcs []runSource, oneSwitch bool) (int64, error) {
	var hdr bytes.Buffer
	if _, err := trace.NewPcapWriter(&hdr, snaplen, trace.LinkTypeEthernet); err != nil {
		return 0, err
	}
	ms := make([]trace.MergeSource, len(srcs))
	for i, s := range srcs {
		in := io.MultiReader(bytes.NewReader(hdr.Bytes()), bufio.NewReaderSize(io.NewSectionReader(s.r, s.off, s.end-s.off), mergeReadBuf))
		r, err := trace.NewReader(in)
		if err != nil {
			return 0, err
		}
		ms[i] = trace.MergeSource{Name: fmt.Sprintf("run %d", i), Reader: r}
	}
	bw := bufio.NewWriterSize(f, spoolBufSize)
	pw, err := trace.NewPcapWriter(bw, snaplen, trace.LinkTypeEthernet)
	if err != nil {
		return 0, err
	}
	n := int64(pcapHeaderLen)
	// Copies of several switches are split into per-switch temporary
	// files next to the output first (trace.Merge).
	if _, err := (trace.MergeOptions{TempDir: filepath.Dir(f.Name()), OneSwitch: oneSwitch}).Merge(func(_ int, p trace.Packet) error {
		n += int64(pcapRecordLen + len(p.Data))
		return pw.WritePacket(p.TimeNs, p.Data, p.OrigLen)
	}, ms...); err != nil {
		return 0, err
	}
	return n, bw.Flush()
}

// publish makes the file f (at tmp) the file at path: mode 0644, fsync,
// close, rename. On error it removes tmp.
func publish(f *os.File, tmp, path string) error {
	err := f.Chmod(0o644)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// syncDir fsyncs a directory so a rename in it is durable (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
