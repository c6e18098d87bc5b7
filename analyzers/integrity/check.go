package integrity

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/netlumina/lumina/trace"
)

// Check checks a merged trace read from r (for example the output of
// trace.MergeFiles), in one pass and constant memory. The trace carries no
// source information, so reasons locate packets by trace index and dumper
// counters are compared in total. Every packet must be an Ethernet frame of
// at least 12 bytes (trace.ErrNotMirrorCopy otherwise).
//
// A read error (trace.ErrTruncated, …) or an invalid Options (ErrOptions)
// is returned as an error, not as a failed verdict: the trace could not be
// checked at all.
func Check(r *trace.Reader, c Counters, opt Options) (Verdict, error) {
	chk, err := NewChecker(opt)
	if err != nil {
		return Verdict{}, err
	}
	for {
		p, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Verdict{}, fmt.Errorf("integrity: %w", err)
		}
		if err := chk.Observe(-1, p); err != nil {
			return Verdict{}, err
		}
	}
	return chk.Finish(c), nil
}

// CheckFile is Check on the pcap or pcapng file at path.
func CheckFile(path string, c Counters, opt Options) (Verdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return Verdict{}, fmt.Errorf("integrity: %w", err)
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return Verdict{}, fmt.Errorf("integrity: %s: %w", path, err)
	}
	v, err := Check(r, c, opt)
	if err != nil {
		return v, fmt.Errorf("%w (in %s)", err, path)
	}
	return v, nil
}

// CheckSources merges the dumpers' traces with trace.Merge (in opt.Seq's
// sequence space) and checks the merged stream as it is produced, without
// writing it. Packets keep their source, so reasons name dumpers and their
// packet indices ("dumper-2 #517"), and Counters.Dumpers[i] is compared with
// the packets from srcs[i]. Merge errors are returned as errors.
func CheckSources(c Counters, opt Options, srcs ...trace.MergeSource) (Verdict, error) {
	return checkSources(c, opt, false, srcs...)
}

// checkSources is CheckSources; oneSwitch skips the merge's per-switch
// split (trace.MergeOptions.OneSwitch).
func checkSources(c Counters, opt Options, oneSwitch bool, srcs ...trace.MergeSource) (Verdict, error) {
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.Name
	}
	chk, err := NewChecker(opt, names...)
	if err != nil {
		return Verdict{}, err
	}
	if _, err := (trace.MergeOptions{Seq: opt.Seq, OneSwitch: oneSwitch}).Merge(chk.Observe, srcs...); err != nil {
		return Verdict{}, fmt.Errorf("integrity: %w", err)
	}
	return chk.Finish(c), nil
}

// CheckFiles is CheckSources on the dumper files at paths. Source i is named
// c.Dumpers[i].Name if set, else by its file name. Files that hold copies of
// switch 0 only (trace.OnlySwitchZero) are merged without the per-switch
// split.
func CheckFiles(c Counters, opt Options, paths ...string) (Verdict, error) {
	srcs := make([]trace.MergeSource, len(paths))
	for i, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return Verdict{}, fmt.Errorf("integrity: %w", err)
		}
		defer f.Close()
		r, err := trace.NewReader(f)
		if err != nil {
			return Verdict{}, fmt.Errorf("integrity: %s: %w", path, err)
		}
		name := filepath.Base(path)
		if i < len(c.Dumpers) && c.Dumpers[i].Name != "" {
			name = c.Dumpers[i].Name
		}
		srcs[i] = trace.MergeSource{Name: name, Reader: r}
	}
	return checkSources(c, opt, trace.OnlySwitchZero(paths...), srcs...)
}
