package collie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ExecEngine runs an external command per experiment (real hardware or any
// other engine). The command gets the workload as JSON on stdin,
// {"id":N,"traffics":[…]}, and prints the metrics as JSON on stdout:
// {"tx_gbps":…,"rx_gbps":…,"tx_mpps":…,"rx_mpps":…,"pause_duration_ratio":…,
// "diag":{"name":value,…}} (optionally "samples":[{…},…] and
// "symptoms":[…]). A non-zero exit, a timeout or bad JSON is an ErrEngine.
// It is safe for concurrent use.
type ExecEngine struct {
	// Command is run with /bin/sh -c.
	Command string
	// Dir is the working directory. Default: the current one.
	Dir string
	// Timeout bounds one experiment. Default 10 minutes.
	Timeout time.Duration
}

var _ Engine = (*ExecEngine)(nil)

type execRequest struct {
	ID int `json:"id"`
	Workload
}

// Run implements Engine.
func (e *ExecEngine) Run(ctx context.Context, id int, w Workload) (*Metrics, error) {
	to := e.Timeout
	if to == 0 {
		to = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	in, err := json.Marshal(execRequest{ID: id, Workload: w})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", e.Command)
	cmd.Dir = e.Dir
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	// Output goes to files, not pipes: a child the command leaves in the
	// background may hold them open, and the experiment must still end
	// when the command does.
	outf, err := os.CreateTemp("", "collie-stdout-")
	if err != nil {
		return nil, err
	}
	defer func() { outf.Close(); os.Remove(outf.Name()) }()
	errf, err := os.CreateTemp("", "collie-stderr-")
	if err != nil {
		return nil, err
	}
	defer func() { errf.Close(); os.Remove(errf.Name()) }()
	cmd.Stdout, cmd.Stderr = outf, errf
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	killProcessGroup(cmd) // what the command left running dies with its experiment
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: %q timed out after %v", ErrEngine, e.Command, to)
	}
	if err != nil {
		msg := strings.TrimSpace(tail(errf, 2048))
		if msg != "" {
			msg = ": " + msg
		}
		return nil, fmt.Errorf("%w: %q: %v%s", ErrEngine, e.Command, err, msg)
	}
	stdout, err := io.ReadAll(io.LimitReader(io.NewSectionReader(outf, 0, 1<<62), 4<<20))
	if err != nil {
		return nil, err
	}
	return DecodeMetrics(stdout)
}

// DecodeMetrics parses an engine's metrics JSON and checks that every number
// DecodeMetrics parses an engine's metrics JSON and checks that every number
// is finite and not negative.
func DecodeMetrics(b []byte) (*Metrics, error) {
	var m Metrics
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrEngine, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: metrics: trailing data after the JSON object", ErrEngine)
	}
	bad := func(name string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%w: metrics: %s = %v", ErrEngine, name, v)
		}
		return nil
	}
	check := func(s Sample) error {
		return errors.Join(bad("tx_gbps", s.TxGbps), bad("rx_gbps", s.RxGbps), bad("tx_mpps", s.TxMpps),
			bad("rx_mpps", s.RxMpps), bad("pause_duration_ratio", s.PauseDurationRatio))
	}
	if err := check(m.Sample); err != nil {
		return nil, err
	}
	for _, s := range m.Samples {
		if err := check(s); err != nil {
			return nil, err
		}
	}
	for k, v := range m.Diag {
		if err := bad("diag."+k, v); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// tail returns the last n bytes of the file f.
func tail(f *os.File, n int64) string {
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, st.Size()-n)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	return string(b)
}
