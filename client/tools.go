package client

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentcap/agentcap/internal/mcpschema"
)

// emptyObjectSchema stands in for a capability without an input schema:
// the protocol reads a missing input as an empty schema, and tool APIs
// want an object schema.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// OpenAITool is a tool definition in the OpenAI function-calling shape.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
	// NeedsConfirmation marks a capability whose calls need a
	// confirmation (see ConfirmationNote); it is not sent.
	NeedsConfirmation bool `json:"-"`
}

// OpenAIFunction is the function of an OpenAITool.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// AnthropicTool is a tool definition in the Anthropic Messages API shape.
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	// NeedsConfirmation is as in OpenAITool; it is not sent.
	NeedsConfirmation bool `json:"-"`
}

// MCPTool is a tool definition in the Model Context Protocol's tools/list
// shape.
type MCPTool struct {
	Name string `json:"name"`
	// Title is the capability's title, else one made of its name, as
	// mcpx titles the tool.
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Annotations are the tool's MCP annotations as mcpx derives them
	// from the capability: title, readOnlyHint for a low-risk read-only
	// capability, destructiveHint (true for high and critical risk)
	// for any other.
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// NeedsConfirmation is as in OpenAITool; it is not sent.
	NeedsConfirmation bool `json:"-"`
}

// ConfirmationNote ends the description of a tool whose capability needs
// a confirmation (Capability.RequiresConfirmation), so that a model knows
// a call will not run at once. The tool conversions also set such tools'
// NeedsConfirmation; Set.Call of one without a token fails with a
// *ConfirmationRequired, whose preview the application shows before it
// calls again with the token.
const ConfirmationNote = "Each call needs the user's confirmation before it runs."

// toolDescription is the description of c's tool.
func toolDescription(c Capability) string {
	if !c.RequiresConfirmation {
		return c.Description
	}
	if c.Description == "" {
		return ConfirmationNote
	}
	return strings.TrimRight(c.Description, " ") + " " + ConfirmationNote
}

func inputSchema(c Capability) json.RawMessage {
	if len(bytes.TrimSpace(c.Input)) == 0 || bytes.Equal(bytes.TrimSpace(c.Input), []byte("null")) {
		return emptyObjectSchema
	}
	return c.Input
}

// OpenAITools returns the set as OpenAI function tools, named by display
// name. Tool calls go back through Set.Call.
func (s *Set) OpenAITools() []OpenAITool {
	tools := make([]OpenAITool, len(s.entries))
	for i, e := range s.entries {
		tools[i] = OpenAITool{Type: "function", Function: OpenAIFunction{
			Name:        e.Name,
			Description: toolDescription(e.Capability),
			Parameters:  inputSchema(e.Capability),
		}, NeedsConfirmation: e.Capability.RequiresConfirmation}
	}
	return tools
}

// AnthropicTools returns the set as Anthropic tools, named by display
// name. Tool calls go back through Set.Call.
func (s *Set) AnthropicTools() []AnthropicTool {
	tools := make([]AnthropicTool, len(s.entries))
	for i, e := range s.entries {
		tools[i] = AnthropicTool{Name: e.Name, Description: toolDescription(e.Capability), InputSchema: inputSchema(e.Capability),
			NeedsConfirmation: e.Capability.RequiresConfirmation}
	}
	return tools
}

// MCPTools returns the set as MCP tools, named by display name. MCP wants
// an object as output schema and structured content: an object output
// schema is used as it is, any other one (a list, say) is wrapped as
// {"type":"object","properties":{"result":...},"required":["result"]}, and
// the tool's results must then be wrapped alike (see MCPStructured). This
// is how package mcpx serves capabilities, so a capability looks the same
// through both. Tool calls go back through Set.Call.
func (s *Set) MCPTools() []MCPTool {
	tools := make([]MCPTool, len(s.entries))
	for i, e := range s.entries {
		c := e.Capability
		title := mcpschema.Title(c.Name, c.Title)
		h := mcpschema.HintsOf(c.ReadOnly, c.Risk)
		ann := struct {
			Title           string `json:"title"`
			ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
			DestructiveHint *bool  `json:"destructiveHint,omitempty"`
		}{title, h.ReadOnly, h.Destructive}
		t := MCPTool{Name: e.Name, Title: title, Description: toolDescription(c), InputSchema: inputSchema(c),
			NeedsConfirmation: c.RequiresConfirmation}
		t.Annotations, _ = json.Marshal(ann)
		t.OutputSchema, _ = mcpschema.Output(e.Capability.Output)
		tools[i] = t
	}
	return tools
}

// MCPStructured returns the MCP structuredContent of a result of the
// capability, matching the output schema MCPTools gives it: data itself
// for an object output schema, {"result": data} for any other, and nil
// when the capability has no output schema.
func MCPStructured(c Capability, data json.RawMessage) json.RawMessage {
	out, wrapped := mcpschema.Output(c.Output)
	if out == nil {
		return nil
	}
	return mcpschema.Structured(data, wrapped)
}
