package main

import (
	"path/filepath"
	"strings"

	"github.com/netlumina/lumina/analyzers"
)

// runRecordFiles are the files of a lumina run's record that lumina
// analyze could be asked to write: its report (the run's own schema, with
// the run's verdicts), its test file and its metadata.
var runRecordFiles = []string{"report.json", "report.txt", "report.html", "config.yaml", "meta.json", "counters.json", "trace.pcap", "trace.pcapng"}

// checkAnalyzeOutputs refuses, as a usage error, outputs that would
// overwrite a run's own record (docs/analyze.md): -o DIR naming a run
// directory (the analyzer's report.json would replace the run's), and
// --html FILE naming one of a run directory's record files. dirs are the
// output directories (one per repeat of a test directory), pages the
// --html files.
func checkAnalyzeOutputs(dirs, pages []string) error {
	for _, d := range dirs {
		if d != "" && analyzers.IsRunDir(d) {
			return usagef("-o %s: a run directory (it holds the run's config.yaml and report.json); lumina analyze never overwrites a run's record: give another directory", d)
		}
	}
	for _, p := range pages {
		if p == "" || !analyzers.IsRunDir(filepath.Dir(p)) {
			continue
		}
		for _, n := range runRecordFiles {
			if filepath.Base(p) == n {
				return usagef("--html %s: a file of a run's record; lumina analyze never overwrites a run's record: give another file", p)
			}
		}
	}
	return nil
}

// repeatOutputs are the -o directory and --html file of repeat directory
// dir of a test directory: DIR/<repeat> and FILE-<repeat>.html.
func repeatOutputs(dir, outDir, htmlOut string) (out, page string) {
	if outDir != "" {
		out = filepath.Join(outDir, filepath.Base(dir))
	}
	if htmlOut != "" {
		ext := filepath.Ext(htmlOut)
		page = strings.TrimSuffix(htmlOut, ext) + "-" + filepath.Base(dir) + ext
	}
	return out, page
}

// analyzeOutputs lists the output directories and pages of an analysis:
// of each repeat in reps, or of the one run if reps is empty.
func analyzeOutputs(reps []string, outDir, htmlOut string) (dirs, pages []string) {
	if len(reps) == 0 {
		return []string{outDir}, []string{htmlOut}
	}
	for _, r := range reps {
		o, p := repeatOutputs(r, outDir, htmlOut)
		dirs, pages = append(dirs, o), append(pages, p)
	}
	return dirs, pages
}
