// Package agentcap is the vocabulary every part of agentcap speaks, and
// the only part of the kit a client needs: the one set of error codes
// ([Code]) with the one table from code to HTTP status, the one error
// type ([Error]), the one writer of error envelopes ([AppendError],
// [WriteError]), and the structures of the wire that servers and clients
// share (capability entries, execute and batch requests and answers,
// discovery, grants, approvals, confirmations).
//
// It imports only the standard library. The server side of the kit is in
// package core (capabilities and their executor), package auth (who is
// calling: the one seam between transports and identity systems), the
// transports httpx and mcpx with their router mounts, and agentauth (the
// Agent Auth Protocol); package client is the Go client.
//
// # Errors
//
// Every failure a caller may see is an *Error: a code, a public message,
// and a hidden cause for logs. A capability refuses a call in its own
// words by returning one:
//
//	return Out{}, agentcap.NewError(agentcap.CodeConflict, "the account is frozen")
//
// An application that wants codes of its own declares them once, each
// answered with the HTTP status of a kit code:
//
//	var CodeInsufficientFunds = agentcap.NewCode("insufficient_funds", agentcap.CodeConflict)
//
// Any other error a capability returns reaches the caller as a redacted
// internal_error: only an *Error speaks to the caller. No error chooses
// an HTTP status; the code does.
package agentcap
