// Package interop runs agentcap's Agent Auth client against real Agent
// Auth providers. The suite and the providers under test are built only
// with the "interop" build tag (see README.md and run.sh): agentcap.go
// and provider.go hold the providers, the tests the suite.
package interop
