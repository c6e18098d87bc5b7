package config

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/internal/yamlbound"
)

// MaxMappingKeys is the largest number of keys in one mapping of a test
// file. The largest real mapping is a section of the schema (a few dozen
// keys); a file with a larger one is refused at the first key beyond the
// limit, before anything is decoded, so that a file of 4 MiB of keys
// costs one linear walk instead of a did-you-mean search and an error per
// key (docs/config.md).
const MaxMappingKeys = 4096

// mappingLimit is the error for a tree holding a mapping of more than
// MaxMappingKeys keys, at the first key beyond the limit; nil if none.
func mappingLimit(file string, root *yaml.Node) ErrorList {
	k := yamlbound.FirstKeyBeyond(root, MaxMappingKeys)
	if k == nil {
		return nil
	}
	return ErrorList{{File: file, Line: k.Line, Col: k.Column,
		Msg: fmt.Sprintf("more than %d keys in one mapping (config.MaxMappingKeys); nothing was decoded", MaxMappingKeys)}}
}
