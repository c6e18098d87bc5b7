package config_test

import (
	"os"
	"testing"

	"github.com/netlumina/lumina/analyzers/report"
	"github.com/netlumina/lumina/config"
)

// TestPlotMemoryIsReports: the estimate's graph data is the report
// package's: a record of report.RecordBytes per packet kept and as much
// again while the page encodes it, report.MaxPlotBytes of records at most.
func TestPlotMemoryIsReports(t *testing.T) {
	if config.PlotPacketMemory != 2*report.RecordBytes || config.PlotMemory != 2*report.MaxPlotBytes {
		t.Errorf("PlotPacketMemory %d, PlotMemory %d; want 2 × report.RecordBytes (%d) and 2 × report.MaxPlotBytes (%d)",
			config.PlotPacketMemory, config.PlotMemory, 2*report.RecordBytes, 2*report.MaxPlotBytes)
	}
}

// TestEstimateSmallTestGraphData: a small test's graph data is its
// packets' records, not the bound of a long trace's: the quickstart (355
// packets, 35 MB measured RSS) fits in 350 MiB, as it did before the
// graph data was counted (a flat 128 MiB made it need about 392 MiB).
func TestEstimateSmallTestGraphData(t *testing.T) {
	b, err := os.ReadFile("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := config.ParseWith("quickstart.yaml", b, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := tc.Estimate()
	if want := (e.Packets + e.PFCFrames) * config.PlotPacketMemory; e.PlotBytes != want || want >= config.PlotMemory {
		t.Errorf("PlotBytes = %d, want %d (%d packets × %d B)", e.PlotBytes, want, e.Packets+e.PFCFrames, config.PlotPacketMemory)
	}
	if _, err := config.ParseWith("quickstart.yaml", b, config.LoadOptions{Resources: config.Resources{MemoryBytes: 350 << 20}}); err != nil {
		t.Errorf("quickstart with a 350 MiB memory limit: %v", err)
	}
}
