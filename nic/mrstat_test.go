package nic

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"testing"
)

// testdata/rdma-stat-mr.json is constructed, not captured: the output
// `rdma -j statistic show mr` gives by iproute2's rdma/stat-mr.c for the
// attributes drivers/infiniband/hw/mlx5/restrack.c (fill_stat_mr_entry)
// puts in each ODP MR's entry. mlx5_0 has a pinned MR (4: no counters)
// and two ODP MRs (5, 6); mlx5_1 one ODP MR.
func readStatMR(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/rdma-stat-mr.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var statMRTests = []struct {
	name    string
	in      string // "" = testdata/rdma-stat-mr.json
	want    map[string]map[string]uint64
	wantErr string
}{
	{name: "two devices, pinned and ODP MRs", want: map[string]map[string]uint64{
		"mlx5_0": {"page_faults": 515, "page_faults_handled": 3, "page_invalidations": 0, "page_invalidations_handled": 0, "page_prefetch": 16},
		"mlx5_1": {"page_faults": 1, "page_faults_handled": 1, "page_invalidations": 0, "page_invalidations_handled": 0, "page_prefetch": 0},
	}},
	{name: "no MRs", in: "[]\n", want: map[string]map[string]uint64{}},
	{name: "pinned MRs only", in: `[{"ifindex":0,"ifname":"rxe0","mrn":1},{"ifindex":0,"ifname":"rxe0","mrn":2}]`,
		want: map[string]map[string]uint64{"rxe0": {}}},
	{name: "before Linux 6.14: no *_handled", in: `[{"ifindex":0,"ifname":"rocep8s0f0","mrn":8,"page_faults":27,"page_invalidations":0,"page_prefetch":29}]`,
		want: map[string]map[string]uint64{"rocep8s0f0": {"page_faults": 27, "page_invalidations": 0, "page_prefetch": 29}}},
	{name: "u64 counter", in: `[{"ifname":"mlx5_0","mrn":1,"page_faults":18446744073709551615}]`,
		want: map[string]map[string]uint64{"mlx5_0": {"page_faults": 1<<64 - 1}}},
	{name: "text output", in: "dev mlx5_0 mrn 5 page_faults 512 page_faults_handled 1\n", wantErr: "not a JSON array"},
	{name: "empty output", in: "", wantErr: "not a JSON array"},
	{name: "no device name", in: `[{"ifindex":0,"mrn":5,"page_faults":1}]`, wantErr: "MR 0 has no device name"},
	{name: "negative counter", in: `[{"ifname":"mlx5_0","mrn":5,"page_faults":-1}]`, wantErr: `mlx5_0 MR 5: page_faults is not a counter: "-1"`},
	{name: "string counter", in: `[{"ifname":"mlx5_0","mrn":5,"page_faults":"1"}]`, wantErr: "page_faults is not a counter"},
	{name: "fractional counter", in: `[{"ifname":"mlx5_0","mrn":5,"page_faults":1.5}]`, wantErr: "page_faults is not a counter"},
}

func TestParseRdmaStatMR(t *testing.T) {
	for _, tt := range statMRTests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if tt.name == statMRTests[0].name {
				in = readStatMR(t)
			}
			got, err := ParseRdmaStatMR([]byte(in))
			if tt.wantErr != "" {
				if !errors.Is(err, ErrCounter) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseRdmaStatMR(%q) = %v, %v, want ErrCounter mentioning %q", in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !maps.EqualFunc(got, tt.want, maps.Equal) {
				t.Errorf("ParseRdmaStatMR(%q) = %v, %v, want %v", in, got, err, tt.want)
			}
		})
	}
}

// runFunc is a Runner that answers with a function.
type runFunc func(name string, args ...string) ([]byte, error)

func (f runFunc) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	return f(name, args...)
}

func TestReadMRCounters(t *testing.T) {
	out := readStatMR(t)
	var calls []string
	h := &Host{Run: runFunc(func(name string, args ...string) ([]byte, error) {
		calls = append(calls, strings.Join(append([]string{name}, args...), " "))
		return []byte(out), nil
	})}
	tests := []struct {
		dev  string
		want map[string]uint64
	}{
		{"mlx5_0", map[string]uint64{"page_faults": 515, "page_faults_handled": 3, "page_invalidations": 0, "page_invalidations_handled": 0, "page_prefetch": 16}},
		{"mlx5_1", map[string]uint64{"page_faults": 1, "page_faults_handled": 1, "page_invalidations": 0, "page_invalidations_handled": 0, "page_prefetch": 0}},
		{"mlx5_2", map[string]uint64{}}, // no MRs
	}
	for _, tt := range tests {
		got, err := h.ReadMRCounters(tt.dev)
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("ReadMRCounters(%s) = %v, %v, want %v", tt.dev, got, err, tt.want)
		}
	}
	for _, c := range calls {
		if c != "rdma -j statistic show mr" {
			t.Errorf("ran %q, want %q", c, "rdma -j statistic show mr")
		}
	}
	if len(calls) != len(tests) {
		t.Errorf("%d commands for %d reads", len(calls), len(tests))
	}

	failing := &Host{Run: runFunc(func(string, ...string) ([]byte, error) {
		return nil, errors.New("Failed to open NETLINK_RDMA socket")
	})}
	got, err := failing.ReadMRCounters("mlx5_0")
	if !errors.Is(err, ErrCounter) || !strings.Contains(err.Error(), "rdma -j statistic show mr: Failed to open NETLINK_RDMA socket") ||
		got == nil || len(got) != 0 {
		t.Errorf("ReadMRCounters with rdma failing = %v, %v, want an empty map and ErrCounter naming the command", got, err)
	}
	garbled := &Host{Run: runFunc(func(string, ...string) ([]byte, error) { return []byte("dev mlx5_0 mrn 5\n"), nil })}
	if got, err := garbled.ReadMRCounters("mlx5_0"); !errors.Is(err, ErrCounter) || got == nil || len(got) != 0 {
		t.Errorf("ReadMRCounters with text output = %v, %v, want an empty map and ErrCounter", got, err)
	}
}

func FuzzParseRdmaStatMR(f *testing.F) {
	f.Add([]byte(readStatMR(f)))
	for _, tt := range statMRTests[1:] {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseRdmaStatMR(b)
		if err != nil {
			if m != nil {
				t.Fatalf("error %v with a result %v", err, m)
			}
			return
		}
		for dev := range m {
			if dev == "" {
				t.Fatal("a device without a name")
			}
		}
	})
}
