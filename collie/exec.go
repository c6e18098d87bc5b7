package collie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	var stdout bytes.Buffer
	stderr := &tailWriter{max: 2048}
	cmd.Stdout = &limitWriter{w: &stdout, n: 4 << 20}
	cmd.Stderr = stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: %q timed out after %v", ErrEngine, e.Command, to)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			msg = ": " + msg
		}
		return nil, fmt.Errorf("%w: %q: %v%s", ErrEngine, e.Command, err, msg)
	}
	return DecodeMetrics(stdout.Bytes())
}

// DecodeMetrics parses an engine's metrics JSON and checks that every number
// is finite and not negative.
func DecodeMetrics(b []byte) (*Metrics, error) {
	var m Metrics
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: metrics: %v", ErrEngine, err)
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

type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		l.w.Write(p[:l.n])
		l.n = 0
		return len(p), nil
	}
	l.n -= len(p)
	return l.w.Write(p)
}

// tailWriter keeps the last max bytes.
type tailWriter struct {
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string { return string(t.b) }
