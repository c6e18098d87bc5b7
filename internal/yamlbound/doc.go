// Package yamlbound bounds the size of the YAML mappings lumina decodes.
//
// Parsing a YAML document into a yaml.Node tree takes time linear in its
// size; what comes after need not: yaml.v3 decoding a mapping into a Go
// map checks for duplicate keys pair by pair (quadratic: 40,000 keys took
// seconds, 400,000 over a minute), and lumina's own decoders spend, per
// unknown key, a did-you-mean search and an error. FirstKeyBeyond finds,
// in one linear walk of the tree, the first key of a mapping that holds
// more keys than a limit, so that a caller can refuse the file at that
// key's FILE:LINE:COL before decoding anything.
//
// Aliases are not followed (an alias is one node wherever it points), so
// the walk visits each node of the document once.
package yamlbound
