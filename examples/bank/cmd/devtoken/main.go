// Command devtoken prints a fresh agent JWT signed with a key file, to
// try the example bank by hand.
//
// Usage:
//
//	go run ./examples/bank/cmd/devtoken -key examples/bank/testdata/alice-agent.key.json \
//	    -aud http://127.0.0.1:8080/capability/execute -capability check_balance
//
// The token is shaped like the ones Agent Auth clients send to execute a
// capability: header {alg: EdDSA, typ: agent+jwt, kid: the key's RFC 7638
// thumbprint}, claims {sub: the agent id, aud, iat, exp = iat + 60 s, jti}
// and, with -capability, a "capabilities" claim. It is good for 60 seconds
// and for one request: the bank records every jti it accepts.
//
// A key file is a JSON object holding the agent's id and its Ed25519
// private key as a JWK (RFC 8037):
//
//	{"demo_only": "...", "agent_id": "agt_alice",
//	 "jwk": {"kty": "OKP", "crv": "Ed25519", "x": "...", "d": "..."}}
//
// The key files under examples/bank/testdata are published demo keys;
// devtoken is for development and must never hold a real agent's key.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// defaultAudience is the execute URL of a bank started as the examples'
// README starts it.
const defaultAudience = "http://127.0.0.1:8080/capability/execute"

const usageText = `usage: devtoken -key FILE [-aud URL] [-capability NAME[,NAME...]]

devtoken prints a fresh agent JWT signed with the agent key in FILE.

`

// maxKeyFileBytes bounds a key file; real ones are a few hundred bytes.
const maxKeyFileBytes = 64 << 10

// keyFile is the content of a key file.
type keyFile struct {
	// DemoOnly marks the published demo keys; devtoken ignores it.
	DemoOnly string          `json:"demo_only"`
	AgentID  string          `json:"agent_id"`
	HostID   string          `json:"host_id"`
	JWK      json.RawMessage `json:"jwk"`
}

// run is main without the exit, so that its failures are plain returns.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devtoken", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyPath := fs.String("key", "", "JSON file with the agent's id and Ed25519 private JWK (required)")
	aud := fs.String("aud", defaultAudience, "audience: the URL of the location that executes the capability")
	capabilities := fs.String("capability", "", "comma-separated capability names for the token's capabilities claim; empty omits the claim")
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "devtoken: "+format+"\n\n", args...)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if *keyPath == "" {
		return bad("-key is required: a JSON file with the agent's id and private key")
	}
	if u, err := url.Parse(*aud); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("-aud %q must be an absolute http(s) URL", *aud)
	}
	names, err := splitCapabilities(*capabilities)
	if err != nil {
		return bad("-capability: %v", err)
	}

	agent, err := loadAgent(*keyPath)
	if err != nil {
		fmt.Fprintf(stderr, "devtoken: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, agent.Token(agentauthtest.Token{Audience: *aud, Capabilities: names}))
	return 0
}

// splitCapabilities reads the -capability list. Empty means no claim (nil);
// an empty name in a list is a mistake, not a request for an empty claim.
func splitCapabilities(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	names := strings.Split(list, ",")
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if names[i] == "" {
			return nil, fmt.Errorf("empty name in %q", list)
		}
	}
	return names, nil
}

// loadAgent reads a key file into a signing identity. The file is read
// strictly: an unknown member is more likely a typo or the wrong file
// than something to ignore.
func loadAgent(path string) (*agentauthtest.Agent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxKeyFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a key file", path, maxKeyFileBytes)
	}
	var kf keyFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return nil, fmt.Errorf("%s: not a key file: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: not a key file: data after the object", path)
	}
	switch {
	case kf.AgentID != "" && kf.HostID != "":
		return nil, fmt.Errorf(`%s: names both an agent and a host; a key file holds one key`, path)
	case kf.AgentID == "" && kf.HostID != "":
		return nil, fmt.Errorf("%s: holds the key of host %q; devtoken signs agent JWTs and needs an agent key", path, kf.HostID)
	case kf.AgentID == "":
		return nil, fmt.Errorf(`%s: "agent_id" is missing`, path)
	case len(kf.JWK) == 0:
		return nil, fmt.Errorf(`%s: "jwk" is missing`, path)
	}
	key, err := client.ParsePrivateJWK(kf.JWK)
	if err != nil {
		return nil, fmt.Errorf("%s: jwk: %w", path, err)
	}
	// The host only stamps the token's iat and jti; its own key, drawn
	// fresh, signs nothing.
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "devtoken"})
	return host.NewAgent(agentauthtest.Agent{ID: kf.AgentID, Key: key}), nil
}
