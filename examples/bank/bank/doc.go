// Package bank is the example bank behind examples/bank: an in-memory
// store of accounts and a ledger, five capabilities over it, and the
// context function and authorization rule that read the user a verified
// caller acts for from its identity.
//
// Capabilities:
//
//	list_accounts    the user's accounts, as a JSON array        (acts for a user)
//	check_balance    the balance of one of them                  (acts for a user)
//	transfer_money   send money, converted at fixed rates        (acts for a user; webauthn, high risk,
//	                                                              grants must constrain destination_account)
//	exchange_rate    the fixed rate between USD, EUR and GBP     (public)
//	statement_export a CSV statement of one account for dates    (acts for a user; async: a job with
//	                                                              progress, polled at its status_url)
//
// transfer_money has a preview (what it debits and credits, and the
// balances it leaves) and every transfer must be confirmed with a
// single-use token bound to the agent and the exact call, which the
// preview hands out (see NewExecutor and NewConfirmer). A transfer that
// debits more than HumanThreshold (1000 in the source account's
// currency) must be confirmed by the account's owner instead
// (Options.Human). It honours
// Idempotency-Key: a retried transfer with the same key and arguments
// moves the money once (see LongRunning).
//
// Capabilities that act for a user refuse agents without one (autonomous
// agents) with 403 unauthorized (Authorize, the Authorize of the Agent
// Auth wiring), and are listed only to agents with a user and to hosts
// linked to one. exchange_rate is listed and described to anyone, even
// without a token (the wiring's AllowAnonymousDiscovery), and runs for
// any agent holding a grant for it.
//
// The context function (Resolver) never trusts the caller: the user is
// the one the verified identity acts for (auth.Identity.UserID: the
// agent's user, else its host's, and none for an autonomous agent) and
// the user's accounts are read from the store by every call but
// check_balance's, whose ledger read checks the account's owner. Money is
// kept in integer cents; amounts travel as JSON numbers.
package bank
