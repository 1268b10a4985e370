// Package skyl is a small tool-calling client in the shape the lesson uses (skyl.Request,
// resp.Message, resp.ToolCalls(), skyl.ToolResultMessage), written with the standard library
// only. It speaks OpenAI Chat Completions and Anthropic Messages, streaming or not, and knows the
// sandbox's contract (sandbox.go): where the model is, which tools exist, how to run one.
package skyl

import (
	"encoding/json"
	"strings"
)

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object, exactly as the model sent it
}

// Tool describes a tool the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON schema
}

// Message is one turn of the conversation, in a form every provider can be given.
type Message struct {
	Role    string     // "user", "assistant" or "tool"
	Text    string     // the prose of a user or assistant turn; the output of a tool result
	Calls   []ToolCall // an assistant turn's tool calls
	CallID  string     // the call a tool result answers
	IsError bool       // a tool result that reports a failure
}

// Request is what the loop sends each round: the same model and tools, a growing conversation.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []Tool
	MaxTokens int
}

// Response is one model turn.
type Response struct {
	Message    Message // the assistant turn itself: append it, never a reconstruction
	StopReason string  // as the provider said it; the call list is the better signal
}

// ToolCalls is the list of calls the model asked for: empty when it is done.
func (r *Response) ToolCalls() []ToolCall { return r.Message.Calls }

// Text is the prose of the turn: the answer, once the model is done.
func (r *Response) Text() string { return r.Message.Text }

// UserText is a user's message.
func UserText(text string) Message { return Message{Role: "user", Text: text} }

// ToolResultMessage carries one call's output, paired with the call by its ID.
func ToolResultMessage(callID, output string) Message {
	return Message{Role: "tool", CallID: callID, Text: output}
}

// ToolErrorMessage carries a failure in place of a call's output, marked so the model can tell.
func ToolErrorMessage(callID, text string) Message {
	return Message{Role: "tool", CallID: callID, Text: text, IsError: true}
}

// AssistantText is the lesson's DON'T: it keeps the prose and silently drops the tool calls,
// so the results appended next have nothing to answer.
func AssistantText(text string) Message { return Message{Role: "assistant", Text: text} }

// arguments is the call's JSON object, "{}" when the model sent none.
func arguments(call ToolCall) json.RawMessage {
	if len(strings.TrimSpace(string(call.Arguments))) == 0 {
		return json.RawMessage("{}")
	}
	return call.Arguments
}
