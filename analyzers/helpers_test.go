package analyzers_test

import (
	"github.com/netlumina/lumina/analyzers"
	"github.com/netlumina/lumina/analyzers/report"
)

func reportText(r *analyzers.Report) string { return report.Text(r) }
