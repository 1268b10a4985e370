package skyl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

// openAI is the Chat Completions wire format: POST {base}/chat/completions.
type openAI struct{}

type openAIFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // the arguments object, as a JSON string
}

type openAICall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []openAICall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

func (openAI) path() string { return "/chat/completions" }

func (openAI) headers(h http.Header, apiKey string) { h.Set("authorization", "Bearer "+apiKey) }

func (openAI) body(req *Request, stream bool) any {
	messages := make([]openAIMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		text := m.Text
		out := openAIMessage{Role: m.Role, Content: &text}
		switch m.Role {
		case "tool":
			out.ToolCallID = m.CallID // OpenAI has no error flag: the text says it
		case "assistant":
			if text == "" && len(m.Calls) > 0 {
				out.Content = nil
			}
			for _, call := range m.Calls {
				out.ToolCalls = append(out.ToolCalls, openAICall{
					ID: call.ID, Type: "function",
					Function: openAIFunction{Name: call.Name, Arguments: string(arguments(call))},
				})
			}
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
	if stream {
		body["stream"] = true
	}
	return body
}

func (openAI) decode(data []byte) (*Response, error) {
	var body struct {
		Choices []struct {
			Message      openAIMessage `json:"message"`
			FinishReason string        `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &body); err != nil || len(body.Choices) == 0 {
		return nil, fmt.Errorf("openai: unreadable response: %s", data)
	}
	choice := body.Choices[0]
	message := Message{Role: "assistant"}
	if choice.Message.Content != nil {
		message.Text = *choice.Message.Content
	}
	for _, call := range choice.Message.ToolCalls {
		message.Calls = append(message.Calls, ToolCall{
			ID: call.ID, Name: call.Function.Name, Arguments: json.RawMessage(call.Function.Arguments),
		})
	}
	return &Response{Message: message, StopReason: choice.FinishReason}, nil
}

// openAIStream joins the text deltas, and each call's fragments by their index.
type openAIStream struct {
	text  string
	calls map[int]*ToolCall
	stop  string
}

func (openAI) newStream() streamAssembler { return &openAIStream{calls: map[int]*ToolCall{}} }

func (s *openAIStream) feed(event map[string]json.RawMessage) error {
	if raw, ok := event["error"]; ok {
		return fmt.Errorf("openai stream error: %s", errorMessage([]byte(`{"error":`+string(raw)+`}`)))
	}
	var choices []struct {
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
	}
	if err := json.Unmarshal(event["choices"], &choices); err != nil {
		return fmt.Errorf("openai stream: unreadable chunk: %w", err)
	}
	for _, choice := range choices {
		if choice.Delta.Content != nil {
			s.text += *choice.Delta.Content
		}
		for _, part := range choice.Delta.ToolCalls {
			call, ok := s.calls[part.Index]
			if !ok {
				call = &ToolCall{}
				s.calls[part.Index] = call
			}
			if part.ID != "" {
				call.ID = part.ID
			}
			call.Name += part.Function.Name
			call.Arguments = append(call.Arguments, part.Function.Arguments...)
		}
		if choice.FinishReason != nil {
			s.stop = *choice.FinishReason
		}
	}
	return nil
}

func (s *openAIStream) response() (*Response, error) {
	if s.stop == "" {
		return nil, fmt.Errorf("openai stream ended before its finish_reason")
	}
	indexes := make([]int, 0, len(s.calls))
	for index := range s.calls {
		indexes = append(indexes, index)
	}
	sort.Ints(indexes)
	message := Message{Role: "assistant", Text: s.text}
	for _, index := range indexes {
		message.Calls = append(message.Calls, *s.calls[index])
	}
	return &Response{Message: message, StopReason: s.stop}, nil
}
