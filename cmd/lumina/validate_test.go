package main

func validateCases() []cliCase {
	td := "../../config/testdata/"
	return []cliCase{
		{name: "validate-ok", args: []string{"validate", "../../examples/remote/listing2.yaml", td + "public-example.yaml"}},
		{name: "validate-typo", args: []string{"validate", td + "invalid-typo.yaml"}},
		{name: "validate-mixed", args: []string{"validate", "../../examples/remote/listing2.yaml", td + "invalid-qpn.yaml", td + "invalid-syntax.yaml", td + "invalid-semantics.yaml"}},
		{name: "validate-missing", args: []string{"validate", "$TMP/none.yaml"}},
		{name: "validate-no-args", args: []string{"validate"}},
	}
}
