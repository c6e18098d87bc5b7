// Package examples embeds the example tests of this folder (its *.yaml
// files), so that `lumina init EXAMPLE` can write a copy of one without
// the repository at hand. Every top-level example is self-contained: it
// names only built-in personalities.
package examples

import "embed"

// FS holds examples/*.yaml.
//
//go:embed *.yaml
var FS embed.FS
