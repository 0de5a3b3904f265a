package agentauth

// Exported for the tests of package agentauth_test.
const (
	MaxIntrospectionResponseBytes = maxIntrospectionResponseBytes
	MaxConstraintDepth            = maxConstraintDepth
)

// TokenType is tokenType, for the tests of package agentauth_test.
var TokenType = tokenType
