package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/core"
)

var (
	shoutCap = core.MustDefine("shout", "Shout a message.",
		func(_ context.Context, _ struct{}, in echoIn) (echoIn, error) {
			return echoIn{Message: strings.ToUpper(in.Message)}, nil
		})
	// whisper has a preview, so that the location serves previews.
	whisperCap = core.MustDefine("whisper", "Whisper a message.",
		func(_ context.Context, _ struct{}, in echoIn) (echoIn, error) {
			return echoIn{Message: strings.ToLower(in.Message)}, nil
		},
		core.WithPreview(func(_ context.Context, _ struct{}, in echoIn) (echoIn, error) { return in, nil }))
)

// spaces matches the runs of spaces that align a table's columns, after
// the first.
var spaces = regexp.MustCompile(`(\S) {2,}`)

// TestSeveralAgents connects two agents to one provider and lists,
// switches and extends them, in steps that build on each other.
func TestSeveralAgents(t *testing.T) {
	p := newProviderWith(t, []core.Definer{echoCap, shoutCap, whisperCap})
	p.deny = map[string]bool{"whisper": true}
	state := t.TempDir()
	lo := "--insecure-loopback"
	hi := []string{"--args", `{"message":"Hi"}`}
	steps := []struct {
		name   string
		args   []string
		code   int
		stdout []string // lines, runs of spaces read as one
		stderr []string
		not    []string // in neither
	}{
		{"first agent", []string{"connect", p.URL, lo, "--name", "reader", "--capability", "echo"}, 0,
			[]string{"Connected agent agt_a (delegated)"}, nil, []string{"current"}},
		{"the second agent becomes current, and says so", []string{"connect", p.URL, lo, "--name", "writer", "--capability", "shout"}, 0,
			[]string{"Connected agent agt_b (delegated)", "It is now the current agent, instead of agt_a (reader): 'agentcap use agt_a' switches back,", "'agentcap connections' lists the saved agents."}, nil, nil},
		{"an ungranted capability names the agent that holds it", append([]string{"execute", "echo", lo}, hi...), 1,
			nil, []string{"403 capability_not_granted", "Agent agt_b (writer) holds no grant for echo; agt_a (reader) does.\nRun 'agentcap use agt_a' to make it the current agent, or add --agent agt_a to the command.\n"}, nil},
		{"and a preview of what nobody holds, how to ask for it", append([]string{"preview", "whisper", lo}, hi...), 1,
			nil, []string{"403 capability_not_granted", "Agent agt_b (writer) holds no grant for whisper, nor does any other saved agent of this provider.\nAsk for it with 'agentcap request --capability whisper' (the user approves it as a connection).\n"}, nil},
		{"and --json", append([]string{"execute", "echo", lo, "--json"}, hi...), 1,
			nil, []string{`"error":"capability_not_granted"`, `"hint":"Agent agt_b (writer) holds no grant for echo; agt_a (reader) does.\nRun 'agentcap use agt_a'`}, nil},
		{"connections", []string{"connections", lo}, 0,
			[]string{"  AGENT NAME MODE PROVIDER STATUS GRANTS", "  agt_a reader delegated " + p.URL + " active echo", "* agt_b writer delegated " + p.URL + " active shout", "* the current agent; 'agentcap use AGENT' makes another current."}, nil, nil},
		{"connections offline", []string{"connections", "--offline"}, 0,
			[]string{"  AGENT NAME MODE PROVIDER", "  agt_a reader delegated " + p.URL, "* agt_b writer delegated " + p.URL}, nil, []string{"active"}},
		{"use by id", []string{"use", "agt_a"}, 0, []string{"The current agent is agt_a (reader) at " + p.URL + "."}, nil, nil},
		{"the current agent runs what it holds", append([]string{"execute", "echo", lo, "--json"}, hi...), 0, []string{`{"message":"Hi"}`}, nil, nil},
		{"use by name", []string{"use", "writer", "--json"}, 0, []string{`"agent_id": "agt_b",`, `"current": true`}, nil, nil},
		{"--agent by name", append([]string{"execute", "echo", lo, "--agent", "reader", "--json"}, hi...), 0, []string{`{"message":"Hi"}`}, nil, nil},
		{"--agent of one that does not hold it", append([]string{"execute", "echo", lo, "--agent", "writer"}, hi...), 1,
			nil, []string{"Run 'agentcap use agt_a' to make it the current agent, or run the command with --agent agt_a instead."}, nil},
		{"use of nobody", []string{"use", "nobody"}, 1, nil, []string{`no saved agent has the id or name "nobody": 'agentcap connections' lists them`}, nil},
		{"nobody holds it", append([]string{"execute", "whisper", lo, "--agent", "reader"}, hi...), 1,
			nil, []string{"Agent agt_a (reader) holds no grant for whisper, nor does any other saved agent of this provider.\nAsk for it with 'agentcap request --capability whisper' --agent agt_a (the user approves it as a connection)."}, nil},
		{"request waits for the approval", []string{"request", lo, "--agent", "reader", "--capability", "shout", "--reason", "louder"}, 0,
			[]string{"Agent agt_a (reader) at " + p.URL + ":", "CAPABILITY GRANT CONSTRAINTS", "echo active", "shout active"},
			[]string{"Approval needed (device_authorization).", "MORE-0001", "Waiting for approval."}, nil},
		{"the granted capability runs", append([]string{"execute", "shout", lo, "--agent", "agt_a", "--json"}, hi...), 0, []string{`{"message":"HI"}`}, nil, nil},
		{"a refused request fails", []string{"request", lo, "--capability", "whisper"}, 1,
			[]string{"whisper denied"}, []string{"agentcap: not granted: whisper"}, nil},
		{"request without capabilities", []string{"request", lo}, 2, nil, []string{"agentcap request: name the capabilities to ask for with --capability", "Usage: agentcap request --capability NAME[:CONSTRAINTS]..."}, nil},
		{"a second reader", []string{"connect", p.URL, lo, "--name", "reader", "--capability", "echo"}, 0, []string{"Connected agent agt_c"}, nil, nil},
		{"an ambiguous name", []string{"use", "reader"}, 1, nil, []string{`2 saved agents are named "reader": name one by its id (agt_a, agt_c)`}, nil},
		{"revoking the current agent", []string{"revoke", lo}, 0, []string{"Revoked agent agt_c."}, nil, nil},
		{"then there is none", []string{"status", lo}, 1, nil, []string{"no current agent: 'agentcap connections' lists the saved ones, 'agentcap use AGENT' makes one current"}, nil},
		{"and connections says so", []string{"connections", "--offline"}, 0, []string{"No agent is current: 'agentcap use AGENT' makes one current."}, nil, []string{"agt_c", "*"}},
	}
	for _, s := range steps {
		code, out, errOut := agentcap(t, state, s.args...)
		flat := spaces.ReplaceAllString(out, "$1 ")
		if code != s.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", s.name, code, s.code, out, errOut)
		}
		for _, want := range s.stdout {
			if !strings.Contains(flat, want) {
				t.Errorf("%s: stdout lacks %q:\n%s", s.name, want, out)
			}
		}
		for _, want := range s.stderr {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", s.name, want, errOut)
			}
		}
		for _, unwanted := range s.not {
			if strings.Contains(out, unwanted) || strings.Contains(errOut, unwanted) {
				t.Errorf("%s: says %q:\n%s%s", s.name, unwanted, out, errOut)
			}
		}
	}
}

// connections --json lists what is saved with the status the provider
// reports, and which agent is current.
func TestConnectionsJSON(t *testing.T) {
	p := newProviderWith(t, []core.Definer{echoCap, shoutCap})
	state := t.TempDir()
	for _, c := range [][]string{
		{"connect", p.URL, "--insecure-loopback", "--name", "reader", "--capability", "echo"},
		{"connect", p.URL, "--insecure-loopback", "--name", "writer", "--mode", "autonomous", "--capability", "shout"},
	} {
		if code, out, errOut := agentcap(t, state, c...); code != 0 {
			t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
		}
	}
	code, out, errOut := agentcap(t, state, "connections", "--insecure-loopback", "--json")
	var got []struct {
		AgentID  string `json:"agent_id"`
		Name     string `json:"name"`
		Mode     string `json:"mode"`
		Provider string `json:"provider"`
		Current  bool   `json:"current"`
		Status   string `json:"status"`
		Grants   []struct {
			Capability string `json:"capability"`
			Status     string `json:"status"`
		} `json:"agent_capability_grants"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 2 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	type row struct {
		id, name, mode, provider string
		current                  bool
		status, grant            string
	}
	for i, want := range []row{
		{"agt_a", "reader", "delegated", p.URL, false, "active", "echo active"},
		{"agt_b", "writer", "autonomous", p.URL, true, "active", "shout active"},
	} {
		g := got[i]
		if len(g.Grants) != 1 {
			t.Errorf("agent %d: grants %+v", i, g.Grants)
			continue
		}
		if have := (row{g.AgentID, g.Name, g.Mode, g.Provider, g.Current, g.Status, g.Grants[0].Capability + " " + g.Grants[0].Status}); have != want {
			t.Errorf("agent %d: %+v, want %+v", i, have, want)
		}
	}
}
