package yamlbound

import "gopkg.in/yaml.v3"

// FirstKeyBeyond returns the key node, in document order, that makes a
// mapping of the tree under root hold more than max keys (the key at
// index max of the first such mapping), or nil if every mapping holds at
// most max keys. A nil root is nil.
func FirstKeyBeyond(root *yaml.Node, max int) *yaml.Node {
	if root == nil {
		return nil
	}
	stack := []*yaml.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yaml.MappingNode && len(n.Content) > 2*max {
			return n.Content[2*max]
		}
		if n.Kind == yaml.AliasNode {
			continue
		}
		// Push the children in reverse, so that they are visited in
		// document order and the first offending mapping is reported.
		for i := len(n.Content) - 1; i >= 0; i-- {
			stack = append(stack, n.Content[i])
		}
	}
	return nil
}
