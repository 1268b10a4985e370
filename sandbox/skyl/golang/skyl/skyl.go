// Package skyl is the lesson's tool-calling client, standard library only: the names and shapes
// The Tool Loop uses (client.Complete(ctx, req), resp.Message, resp.ToolCalls(),
// skyl.ToolResultMessage, skyl.AssistantText, skyl.CollectStream, skyl.StopToolUse), speaking the
// four wire formats the sandbox serves: OpenAI Chat Completions ("openai"), OpenAI Responses
// ("openai-responses"), Anthropic Messages ("anthropic") and Gemini ("gemini").
//
// client.Complete returns one whole turn. client.Stream returns its events (TextDelta,
// ToolCallStart, ToolCallDelta, ...): there is no resp.Message on a stream, so the loop rebuilds
// the turn from them, with its own code or with skyl.CollectStream. A reasoning model's turn carries
// its reasoning (Responses reasoning items, Anthropic thinking blocks, Gemini thought signatures) as
// Reasoning parts of resp.Message, which go back to the provider exactly as they came.
//
// sandbox.go reads the sandbox's contract (`sandbox grade` runs a program with it): where the model
// is, which tools exist, how to run one.
package skyl

import (
	"encoding/json"
	"strings"
)

// StopReason is why the model stopped. The call list, not this, is the reliable end-of-loop signal:
// on Gemini any turn with a function call reports StopToolUse, whatever its finishReason said.
type StopReason string

// The stop reasons, the same for every provider.
const (
	StopEndTurn      StopReason = "end_turn"
	StopToolUse      StopReason = "tool_use"
	StopMaxTokens    StopReason = "max_tokens"
	StopStopSequence StopReason = "stop_sequence"
	StopRefusal      StopReason = "refusal"
	StopOther        StopReason = "other"
)

// Part is one piece of a message's content: a Text, a ToolCall, a ToolResult or a Reasoning.
type Part interface{ isPart() }

// Text is a piece of prose.
type Text struct{ Text string }

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string          // the provider's id for the call: its result answers this id
	Name      string          // the tool's name
	Arguments json.RawMessage // a JSON object, exactly as the model sent it
	// Meta holds provider details a replay needs (the Responses item id). A turn rebuilt from a
	// stream keeps ToolCallStart.Meta on its call.
	Meta map[string]string
}

// ToolResult is the answer to one call, paired with it by CallID.
type ToolResult struct {
	CallID  string
	Content string
	IsError bool // the tool failed: Anthropic and Gemini carry the flag; the text should say so too
}

// Reasoning is what a reasoning model thought before it acted, exactly as its provider sent it.
// Read Summary; never build one: only a response makes them (resp.Message carries them, a stream's
// ReasoningEnd events too), and the provider checks their signatures.
type Reasoning struct {
	Provider string          // the wire format that sent it: it goes back only there
	Summary  string          // the readable part, when the provider shows one
	Redacted bool            // the provider hid it entirely (Anthropic redacted_thinking)
	Payload  json.RawMessage // the provider's item, block or signature, as received: what goes back
}

func (Text) isPart()       {}
func (ToolCall) isPart()   {}
func (ToolResult) isPart() {}
func (Reasoning) isPart()  {}

// Message is one turn of the conversation: a role and its content parts, in order.
type Message struct {
	Role    string // "system", "user", "assistant" or "tool"
	Content []Part
}

// Text is all the message's text parts joined: what a person would read.
func (m Message) Text() string {
	var text strings.Builder
	for _, part := range m.Content {
		if t, ok := part.(Text); ok {
			text.WriteString(t.Text)
		}
	}
	return text.String()
}

// ToolCalls is the message's calls, in the order the model made them.
func (m Message) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, part := range m.Content {
		if call, ok := part.(ToolCall); ok {
			calls = append(calls, call)
		}
	}
	return calls
}

// ToolResults is the message's results (a tool message holds one).
func (m Message) ToolResults() []ToolResult {
	var results []ToolResult
	for _, part := range m.Content {
		if result, ok := part.(ToolResult); ok {
			results = append(results, result)
		}
	}
	return results
}

// Tool describes a tool the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON schema
}

// Request is what the loop sends each round: the same model and tools, a growing conversation.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []Tool
	MaxTokens int    // 0: 1024
	System    string // a system prompt, sent where each provider wants it
	// Reasoning asks a reasoning model to show its reasoning (Anthropic thinking, Responses
	// summaries, Gemini thoughts). Whatever reasoning a turn carries must go back with it.
	Reasoning bool
}

// Usage is what the turn cost, in tokens.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Response is one model turn as the provider sent it.
type Response struct {
	Message    Message // the assistant turn itself, calls and reasoning included: append it, never a reconstruction
	StopReason StopReason
	Usage      Usage
	Model      string
	ID         string
}

// ToolCalls is the list of calls the model asked for: empty when it is done.
func (r *Response) ToolCalls() []ToolCall { return r.Message.ToolCalls() }

// Text is the prose of the turn: the answer, once the model is done.
func (r *Response) Text() string { return r.Message.Text() }

// UserText is a user's message.
func UserText(text string) Message { return Message{Role: "user", Content: []Part{Text{text}}} }

// SystemText is a system prompt as a message.
func SystemText(text string) Message { return Message{Role: "system", Content: []Part{Text{text}}} }

// AssistantText is an assistant turn holding only prose. It is the lesson's DON'T: appending
// AssistantText(resp.Text()) instead of resp.Message drops the tool calls, so the results appended
// next answer nothing and the provider refuses them. It exists so that mistake can be made and seen.
func AssistantText(text string) Message {
	return Message{Role: "assistant", Content: []Part{Text{text}}}
}

// ToolResultMessage carries one call's output, paired with the call by its ID.
func ToolResultMessage(callID, output string) Message {
	return Message{Role: "tool", Content: []Part{ToolResult{CallID: callID, Content: output}}}
}

// ToolErrorMessage carries a failure in place of a call's output, marked so the model can tell.
func ToolErrorMessage(callID, text string) Message {
	return Message{Role: "tool", Content: []Part{ToolResult{CallID: callID, Content: text, IsError: true}}}
}

// arguments is the call's JSON object, "{}" when the model sent none.
func arguments(call ToolCall) json.RawMessage {
	if len(strings.TrimSpace(string(call.Arguments))) == 0 {
		return json.RawMessage("{}")
	}
	return call.Arguments
}
