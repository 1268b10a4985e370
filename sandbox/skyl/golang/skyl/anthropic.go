package skyl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropic is the Messages API: POST {ANTHROPIC_BASE_URL}/v1/messages. A thinking model's turn
// starts with thinking (and redacted_thinking) blocks, which go back exactly as they came.
type anthropic struct{}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      *string         `json:"data,omitempty"`
}

type anthropicMessage struct {
	Role    string            `json:"role"`
	Content []json.RawMessage `json:"content"`
}

func (anthropic) endpoint(*Request, bool) string { return "/v1/messages" }

func (anthropic) headers(h http.Header, apiKey string) {
	h.Set("x-api-key", apiKey)
	h.Set("anthropic-version", "2023-06-01")
}

func mustJSON(value any) json.RawMessage {
	data, err := json.Marshal(value)
	if err != nil {
		panic(err) // only our own block types are marshaled here
	}
	return data
}

// foreign is the error for reasoning that another provider sent: it goes back only there.
func foreign(r Reasoning, provider string) error {
	return fmt.Errorf("a reasoning part from %s cannot be sent to %s: a provider only accepts its own reasoning back",
		r.Provider, provider)
}

func (anthropic) body(req *Request, stream bool) (any, error) {
	var messages []anthropicMessage
	system := []string{}
	if req.System != "" {
		system = append(system, req.System)
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			system = append(system, m.Text())
		case "tool":
			// Every result of a turn goes in one user message, right after that turn.
			for _, result := range m.ToolResults() {
				content := result.Content
				block := mustJSON(anthropicBlock{Type: "tool_result", ToolUseID: result.CallID, Content: &content, IsError: result.IsError})
				last := len(messages) - 1
				if last >= 0 && messages[last].Role == "user" && strings.Contains(string(messages[last].Content[0]), `"tool_result"`) {
					messages[last].Content = append(messages[last].Content, block)
				} else {
					messages = append(messages, anthropicMessage{Role: "user", Content: []json.RawMessage{block}})
				}
			}
		default:
			// Never null (the API wants a list), and no empty text block (the API refuses those).
			blocks := []json.RawMessage{}
			for _, part := range m.Content {
				switch p := part.(type) {
				case Text:
					if p.Text != "" {
						text := p.Text
						blocks = append(blocks, mustJSON(anthropicBlock{Type: "text", Text: &text}))
					}
				case ToolCall:
					blocks = append(blocks, mustJSON(anthropicBlock{Type: "tool_use", ID: p.ID, Name: p.Name, Input: arguments(p)}))
				case Reasoning:
					if p.Provider != "anthropic" {
						return nil, foreign(p, "anthropic")
					}
					blocks = append(blocks, p.Payload)
				}
			}
			messages = append(messages, anthropicMessage{Role: m.Role, Content: blocks})
		}
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = 1024
	}
	body := map[string]any{"model": req.Model, "max_tokens": maxTokens, "messages": messages}
	if len(system) > 0 {
		body["system"] = strings.Join(system, "\n\n")
	}
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, tool := range req.Tools {
			tools = append(tools, map[string]any{"name": tool.Name, "description": tool.Description, "input_schema": tool.Parameters})
		}
		body["tools"] = tools
	}
	if req.Reasoning {
		body["thinking"] = map[string]string{"type": "adaptive"} // no budget to keep below max_tokens
	}
	if stream {
		body["stream"] = true
	}
	return body, nil
}

func anthropicStop(stop string) StopReason {
	switch stop {
	case "end_turn", "pause_turn":
		return StopEndTurn
	case "tool_use":
		return StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "stop_sequence":
		return StopStopSequence
	case "refusal":
		return StopRefusal
	}
	return StopOther
}

// anthropicPart is one content block of a response as a skyl part (nil for blocks a loop ignores).
func anthropicPart(raw json.RawMessage) (Part, error) {
	var block anthropicBlock
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, fmt.Errorf("anthropic: unreadable content block %.200s", raw)
	}
	switch block.Type {
	case "text":
		if block.Text != nil && *block.Text != "" {
			return Text{*block.Text}, nil
		}
	case "tool_use":
		return ToolCall{ID: block.ID, Name: block.Name, Arguments: arguments(ToolCall{Arguments: block.Input})}, nil
	case "thinking":
		summary := ""
		if block.Thinking != nil {
			summary = *block.Thinking
		}
		return Reasoning{Provider: "anthropic", Summary: summary, Payload: raw}, nil
	case "redacted_thinking":
		return Reasoning{Provider: "anthropic", Redacted: true, Payload: raw}, nil
	}
	return nil, nil
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

func (anthropic) decode(data []byte) (*Response, error) {
	var body struct {
		ID         string            `json:"id"`
		Model      string            `json:"model"`
		Content    []json.RawMessage `json:"content"`
		StopReason string            `json:"stop_reason"`
		Usage      anthropicUsage    `json:"usage"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, fmt.Errorf("anthropic: unreadable response: %.300s", data)
	}
	message := Message{Role: "assistant"}
	for _, raw := range body.Content {
		part, err := anthropicPart(raw)
		if err != nil {
			return nil, err
		}
		if part != nil {
			message.Content = append(message.Content, part)
		}
	}
	return &Response{
		Message: message, StopReason: anthropicStop(body.StopReason), Model: body.Model, ID: body.ID,
		Usage: Usage{body.Usage.InputTokens, body.Usage.OutputTokens},
	}, nil
}

// anthropicStream: content blocks start, grow by deltas and stop, by index; message_stop ends the turn.
type anthropicStream struct {
	kinds     map[int]string          // block index -> "text", "call", "reasoning"
	numbers   map[int]int             // block index -> the call's or reasoning part's index in the turn
	thinking  map[int]*anthropicBlock // open thinking blocks, assembled for their ReasoningEnd
	calls     int
	reasoning int
	end       MessageEnd
	done      bool
}

func (anthropic) stream() streamDecoder {
	return &anthropicStream{kinds: map[int]string{}, numbers: map[int]int{}, thinking: map[int]*anthropicBlock{}}
}

func (s *anthropicStream) close() []Event { return nil }

func (s *anthropicStream) ended() bool { return s.done }

func (s *anthropicStream) feed(_ string, data []byte) ([]Event, error) {
	var event struct {
		Type         string          `json:"type"`
		Index        int             `json:"index"`
		ContentBlock json.RawMessage `json:"content_block"`
		Delta        struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			Thinking    string `json:"thinking"`
			Signature   string `json:"signature"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Message struct {
			ID    string         `json:"id"`
			Model string         `json:"model"`
			Usage anthropicUsage `json:"usage"`
		} `json:"message"`
		Usage *anthropicUsage `json:"usage"`
	}
	if err := json.Unmarshal(data, &event); err != nil {
		return nil, fmt.Errorf("anthropic stream: unreadable event %.200q: %w", data, err)
	}
	switch event.Type {
	case "error":
		return nil, fmt.Errorf("anthropic stream error: %s", errorMessage(data))
	case "message_start":
		s.end.ID, s.end.Model = event.Message.ID, event.Message.Model
		s.end.Usage = Usage{event.Message.Usage.InputTokens, event.Message.Usage.OutputTokens}
	case "content_block_start":
		var block anthropicBlock
		if err := json.Unmarshal(event.ContentBlock, &block); err != nil {
			return nil, fmt.Errorf("anthropic stream: unreadable content block %.200s", event.ContentBlock)
		}
		switch block.Type {
		case "text":
			s.kinds[event.Index] = "text"
			if block.Text != nil && *block.Text != "" {
				return []Event{TextDelta{*block.Text}}, nil
			}
		case "tool_use":
			s.kinds[event.Index], s.numbers[event.Index] = "call", s.calls
			s.calls++
			return []Event{ToolCallStart{Index: s.numbers[event.Index], ID: block.ID, Name: block.Name}}, nil
		case "thinking", "redacted_thinking":
			s.kinds[event.Index], s.numbers[event.Index] = "reasoning", s.reasoning
			s.reasoning++
			s.thinking[event.Index] = &block
		}
	case "content_block_delta":
		number := s.numbers[event.Index]
		switch event.Delta.Type {
		case "text_delta":
			if event.Delta.Text != "" {
				return []Event{TextDelta{event.Delta.Text}}, nil
			}
		case "input_json_delta":
			if s.kinds[event.Index] != "call" {
				return nil, fmt.Errorf("anthropic stream: arguments for block %d, which is not a started tool_use", event.Index)
			}
			if event.Delta.PartialJSON != "" {
				return []Event{ToolCallDelta{Index: number, Arguments: event.Delta.PartialJSON}}, nil
			}
		case "thinking_delta":
			if block := s.thinking[event.Index]; block != nil {
				text := event.Delta.Thinking
				if block.Thinking != nil {
					text = *block.Thinking + text
				}
				block.Thinking = &text
				return []Event{ReasoningDelta{Index: number, Text: event.Delta.Thinking}}, nil
			}
		case "signature_delta":
			if block := s.thinking[event.Index]; block != nil {
				signature := event.Delta.Signature
				if block.Signature != nil {
					signature = *block.Signature + signature
				}
				block.Signature = &signature
			}
		}
	case "content_block_stop":
		switch s.kinds[event.Index] {
		case "call":
			return []Event{ToolCallEnd{s.numbers[event.Index]}}, nil
		case "reasoning":
			part, err := anthropicPart(mustJSON(s.thinking[event.Index]))
			if err != nil {
				return nil, err
			}
			return []Event{ReasoningEnd{Index: s.numbers[event.Index], Reasoning: part.(Reasoning)}}, nil
		}
	case "message_delta":
		s.end.StopReason = anthropicStop(event.Delta.StopReason)
		if event.Usage != nil {
			s.end.Usage.OutputTokens = event.Usage.OutputTokens
		}
	case "message_stop":
		s.done = true
		return []Event{s.end}, nil
	}
	return nil, nil
}
