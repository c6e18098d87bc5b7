// Package report defines the analyzers' report (the stable JSON schema of
// `lumina analyze --format json` and report.json, documented in
// docs/analyze.md) and writes it as report.json, report.txt (a short human
// summary) and report.html (docs/report.md).
//
// Verdicts are pass, fail, skip and inconclusive (a bound check whose
// margin was within the timestamp uncertainty). Only fail fails a report
// (Passed); Result is PASS, FAIL or INCONCLUSIVE (passed, with
// inconclusive checks), and the text and HTML forms show inconclusive
// checks with their reasons.
//
// Checks holds every check in one place: integrity, the run's own checks
// (switch_state, events_applied, generator: a lumina run's, or taken from
// its record by the re-analysis of its directory), the analyzers', events
// and, in JSON, pfc (Report.PFC). Text (TextRun for lumina run's
// report.txt) is the one text report: every check's reason and numbers
// and a last line "result: PASS|FAIL (checks)|INCONCLUSIVE (…)|INVALID
// (…)".
//
// report.html is one self-contained page: no network, everything inline.
// Its time-sequence graphs (time against PSN − IPSN per connection, one
// point per packet, zoomable, with each packet's `lumina decode` line on
// hover) and latency CDFs are drawn in the browser by uPlot, which
// scripts/fetch-uplot.sh fetches at a pinned version with a verified
// checksum into uplot/ (embedded with go:embed, license beside it); the
// page's own script and style are assets/page.js and page.css. Tables and
// the loss and timeout bar charts are HTML and inline SVG (gonum plot).
// Its Checks table lists every check once (checkRows): with a RunInfo
// (lumina run's page) the run's own checks too, which the analysis does
// not have (events_applied, generator, switch_state); the page also has a
// timing line, the run's goodput, the events tables, the pfc analyzer's
// watchdog firings on the graphs and a loading indicator that the script
// hides once the graphs are drawn (docs/report.md).
//
// SeqCollector gathers the graphs' packets during the analysis pass: every
// packet of every connection, at most MaxPlotBytes of records in all
// (the trace's first packets; the others are counted), in buffers that
// never copy to grow (no allocation per packet otherwise). The page stores them as gzipped little-endian columns
// (page.go); the browser draws every packet when at most 100,000 are in
// view and one point per pixel and class beyond. The decode line is built
// in the browser from the columns rather than stored; cmd/lumina's
// TestReportBrowser checks it against lumina decode for every packet of
// testdata/kinds-*.pcap and two sim runs. Pitfall: a change to lumina
// decode's text format must be followed in assets/page.js (line()).
package report
