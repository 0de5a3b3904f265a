// Package core defines capabilities, the narrow application actions a Go
// service exposes to authenticated AI agents, and runs them.
//
// A capability is another entry point into an ordinary use case. It is
// defined once with [Define] from a typed handler; the JSON Schemas of its
// input and output are derived from the Go types at that moment. A
// [Registry] holds definitions. An [Executor] runs them through a fixed
// pipeline whose stages are named in every error, hook event and span:
//
//	lookup -> input -> authorize -> context -> handler -> output
//
// Input is decoded strictly and once: unknown keys, duplicate keys and
// keys that differ from a field name only by letter case are rejected, and
// every schema violation is reported with a JSON Pointer. Every call has
// a caller: the *auth.Identity a transport's verifier returned (package
// auth), or nil for an anonymous or in-process call. The identity's
// Authorizer (an Agent Auth agent's grants, say) decides the call at the
// authorize stage, and the value it approved is the value the context
// function and the handler receive. The context function given to
// [NewExecutor] is the security boundary: it turns a verified identity
// into the application's own authorization state and never trusts roles
// or tenants the caller sent. Output is validated before it reaches any
// transport.
//
// Errors are safe by default. Every failure is an *agentcap.Error with a
// code from the one code set, its stage, a public message and a hidden
// cause. A capability refuses a call in its own words by returning an
// *agentcap.Error; plain errors and panics are redacted to
// internal_error. The code decides the HTTP status (package agentcap), so
// every transport agrees.
//
// # Constraints and units
//
// An identity layer such as agentauth grants a capability with
// constraints on its top-level input fields ("destination_account is
// acc_456", "amount at most 500"), which a person approves as they read
// them. A numeric bound means nothing without its unit: "amount at most
// 500" lets 500 GBP through, some 635 USD, when the caller picks the
// currency and the handler converts. A capability whose numbers carry a
// unit must make the unit part of what is granted: name the field that
// holds it with [WithUnit] (a grant that bounds amount must then
// constrain currency too, and approval pages show "at most 500 USD"), or
// fix the unit in the use case itself (the amount is always in the
// source account's currency) and say so in the description.
// [WithRequiredConstraints] names the fields every grant must constrain.
//
// # Long-running calls
//
// Three pieces let transports serve calls that outlive one quick answer,
// without any transport in core: [DefineStream] gives a handler an
// [Emitter] of typed, validated chunks, which reach whatever sink the
// transport installed with [WithStream] (httpx: server-sent events; an
// MCP server: progress notifications, say); [WithAsync] marks capabilities
// whose calls run as jobs (package jobs keeps them; httpx answers 202 and
// serves polling); [OnHandlerStart] tells a transport the moment a call
// has passed validation, authorization and context construction, so
// that it can still answer a refusal directly and only then commit to a
// stream or a job. [ReportProgress] reaches the transport's listener
// ([WithProgress]) in both cases. Batches refuse streaming and async
// capabilities per item with batch_unsupported_result_type; the executor's default
// timeout does not apply to them (the transport bounds streams, the job
// runner jobs).
//
// # Telemetry and the audit trail
//
// Every execution and preview is a span of the tracer
// "github.com/agentcap/agentcap/core", named after the capability
// ("agentcap.unknown_capability" for an unknown one), and a point of the
// counter "agentcap.capability.executions" and the histogram
// "agentcap.capability.duration" (seconds). Their attributes are bounded:
// "agentcap.capability", "agentcap.stage", "agentcap.outcome" ("ok" or
// "error"), "agentcap.error_code" on failures, and "agentcap.operation"
// ("preview") on previews; never the caller, the arguments or the
// result. Audit records that cannot be written are counted by
// "agentcap.audit.failures", with "agentcap.audit.event".
//
// Audit records (Config.Audit) name the capability's event (WithAuditEvent,
// else its name), or "preview", "confirmation.issued",
// "confirmation.consumed" and "confirmation.denied"; their outcome is "ok",
// "started" (the record written before the handler of a capability
// defined WithAuditRequired) or the failure's code. Input fields tagged
// `audit:"secret"` are kept as "[redacted]" (WithAuditArguments). Package
// audit names the same events and outcomes.
//
// Package core imports no web framework and no authentication library.
// Transports live in httpx (and the ginx, echox, fiberx mounts); Agent Auth
// lives in agentauth.
package core
