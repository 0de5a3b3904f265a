package mcpschema

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Title is the title of a capability's tool: the one it declares, else
// one made of its name ("check_balance" becomes "Check balance",
// "accounts.list" "Accounts list"). mcpx and the agentcap command's MCP
// bridge title tools alike with it.
func Title(name, declared string) string {
	if declared != "" {
		return declared
	}
	t := strings.NewReplacer("_", " ", ".", " ").Replace(name)
	t = strings.Join(strings.Fields(t), " ")
	r, size := utf8.DecodeRuneInString(t)
	if size == 0 {
		return name
	}
	return string(unicode.ToUpper(r)) + t[size:]
}

// Hints are a tool's annotations as a capability implies them.
type Hints struct {
	// ReadOnly: the capability declares itself read-only and its risk
	// is low.
	ReadOnly bool
	// Destructive is nil for a read-only tool; otherwise whether the
	// capability's risk is high or critical.
	Destructive *bool
}

// HintsOf derives the hints of a capability from its read-only
// declaration and its risk ("low", "medium", "high", "critical"): a
// low-risk capability that declares itself read-only is read-only; every
// other one may write, destructively when its risk is high or critical.
func HintsOf(readOnly bool, risk string) Hints {
	if readOnly && (risk == "low" || risk == "") {
		return Hints{ReadOnly: true}
	}
	destructive := risk == "high" || risk == "critical"
	return Hints{Destructive: &destructive}
}
