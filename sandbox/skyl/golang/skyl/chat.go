package skyl

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// chat is OpenAI Chat Completions: POST {OPENAI_BASE_URL}/chat/completions. It sends no reasoning
// back: Chat Completions keeps a model's reasoning to itself.
type chat struct{}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // the arguments object, as a JSON string
}

type chatCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []chatCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

func (chat) endpoint(*Request, bool) string { return "/chat/completions" }

func (chat) headers(h http.Header, apiKey string) { h.Set("authorization", "Bearer "+apiKey) }

func (chat) body(req *Request, stream bool) (any, error) {
	messages := []chatMessage{}
	if req.System != "" {
		system := req.System
		messages = append(messages, chatMessage{Role: "system", Content: &system})
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			for _, result := range m.ToolResults() { // Chat has no error flag: the text says it
				content := result.Content
				messages = append(messages, chatMessage{Role: "tool", Content: &content, ToolCallID: result.CallID})
			}
			continue
		}
		text := m.Text()
		out := chatMessage{Role: m.Role, Content: &text}
		for _, call := range m.ToolCalls() {
			out.ToolCalls = append(out.ToolCalls, chatCall{
				ID: call.ID, Type: "function",
				Function: chatFunction{Name: call.Name, Arguments: string(arguments(call))},
			})
		}
		if text == "" && len(out.ToolCalls) > 0 {
			out.Content = nil
		}
		messages = append(messages, out)
	}
	body := map[string]any{"model": req.Model, "messages": messages}
	if len(req.Tools) > 0 { // OpenAI refuses an empty tools array
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, tool := range req.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": tool})
		}
		body["tools"] = tools
	}
	if req.MaxTokens > 0 {
		body["max_completion_tokens"] = req.MaxTokens
	}
	if stream {
		body["stream"] = true
	}
	return body, nil
}

func chatStop(finish string) StopReason {
	switch finish {
	case "stop":
		return StopEndTurn
	case "tool_calls", "function_call":
		return StopToolUse
	case "length":
		return StopMaxTokens
	case "content_filter":
		return StopRefusal
	}
	return StopOther
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func (chat) decode(data []byte) (*Response, error) {
	var body struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Message      chatMessage `json:"message"`
			FinishReason string      `json:"finish_reason"`
		} `json:"choices"`
		Usage chatUsage `json:"usage"`
	}
	if err := json.Unmarshal(data, &body); err != nil || len(body.Choices) == 0 {
		return nil, fmt.Errorf("openai: unreadable response: %.300s", data)
	}
	choice := body.Choices[0]
	message := Message{Role: "assistant"}
	if choice.Message.Content != nil && *choice.Message.Content != "" {
		message.Content = append(message.Content, Text{*choice.Message.Content})
	}
	for _, call := range choice.Message.ToolCalls {
		parsed := ToolCall{ID: call.ID, Name: call.Function.Name, Arguments: json.RawMessage(call.Function.Arguments)}
		parsed.Arguments = arguments(parsed)
		message.Content = append(message.Content, parsed)
	}
	return &Response{
		Message: message, StopReason: chatStop(choice.FinishReason), Model: body.Model, ID: body.ID,
		Usage: Usage{body.Usage.PromptTokens, body.Usage.CompletionTokens},
	}, nil
}

// chatStream: text deltas, and each call's fragments under its index; the finish_reason ends the
// calls, and the end of the stream ([DONE]) the turn.
type chatStream struct {
	open   map[int]bool
	order  []int
	end    *MessageEnd
	closed bool
}

func (chat) stream() streamDecoder { return &chatStream{open: map[int]bool{}} }

func (s *chatStream) ended() bool { return s.end != nil && s.closed }

func (s *chatStream) feed(_ string, data []byte) ([]Event, error) {
	var chunk struct {
		ID      string           `json:"id"`
		Model   string           `json:"model"`
		Error   *json.RawMessage `json:"error"`
		Choices []struct {
			Delta struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *chatUsage `json:"usage"`
	}
	if err := json.Unmarshal(data, &chunk); err != nil {
		return nil, fmt.Errorf("openai stream: unreadable chunk %.200q: %w", data, err)
	}
	if chunk.Error != nil {
		return nil, fmt.Errorf("openai stream error: %s", errorMessage(data))
	}
	var events []Event
	for _, choice := range chunk.Choices {
		if choice.Delta.Content != nil && *choice.Delta.Content != "" {
			events = append(events, TextDelta{*choice.Delta.Content})
		}
		for _, part := range choice.Delta.ToolCalls {
			if !s.open[part.Index] {
				s.open[part.Index] = true
				s.order = append(s.order, part.Index)
				events = append(events, ToolCallStart{Index: part.Index, ID: part.ID, Name: part.Function.Name})
			}
			if part.Function.Arguments != "" {
				events = append(events, ToolCallDelta{Index: part.Index, Arguments: part.Function.Arguments})
			}
		}
		if choice.FinishReason != nil {
			for _, index := range s.order {
				events = append(events, ToolCallEnd{index})
			}
			s.end = &MessageEnd{StopReason: chatStop(*choice.FinishReason), Model: chunk.Model, ID: chunk.ID}
		}
	}
	if chunk.Usage != nil && s.end != nil {
		s.end.Usage = Usage{chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens}
	}
	return events, nil
}

// done is the [DONE] line: the turn ends with what the finish chunk (and a usage chunk) said.
func (s *chatStream) close() []Event {
	if s.end == nil || s.closed {
		return nil
	}
	s.closed = true
	return []Event{*s.end}
}
