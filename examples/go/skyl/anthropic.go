package skyl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

// anthropic is the Messages wire format: POST {base}/v1/messages.
type anthropic struct{}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

func (anthropic) path() string { return "/v1/messages" }

func (anthropic) headers(h http.Header, apiKey string) {
	h.Set("x-api-key", apiKey)
	h.Set("anthropic-version", "2023-06-01")
}

func (anthropic) body(req *Request, stream bool) any {
	var messages []anthropicMessage
	for _, m := range req.Messages {
		switch m.Role {
		case "tool":
			// Every result of a turn goes in one user message, right after that turn.
			text := m.Text
			block := anthropicBlock{Type: "tool_result", ToolUseID: m.CallID, Content: &text, IsError: m.IsError}
			last := len(messages) - 1
			if last >= 0 && messages[last].Role == "user" && messages[last].Content[0].Type == "tool_result" {
				messages[last].Content = append(messages[last].Content, block)
			} else {
				messages = append(messages, anthropicMessage{Role: "user", Content: []anthropicBlock{block}})
			}
		case "assistant":
			// Never null (the API wants a list), and no empty text block (the API refuses those).
			blocks := []anthropicBlock{}
			if m.Text != "" {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: m.Text})
			}
			for _, call := range m.Calls {
				blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: call.ID, Name: call.Name, Input: arguments(call)})
			}
			messages = append(messages, anthropicMessage{Role: "assistant", Content: blocks})
		default:
			messages = append(messages, anthropicMessage{Role: m.Role, Content: []anthropicBlock{{Type: "text", Text: m.Text}}})
		}
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = 1024
	}
	body := map[string]any{"model": req.Model, "max_tokens": maxTokens, "messages": messages}
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, tool := range req.Tools {
			tools = append(tools, map[string]any{
				"name": tool.Name, "description": tool.Description, "input_schema": tool.Parameters,
			})
		}
		body["tools"] = tools
	}
	if stream {
		body["stream"] = true
	}
	return body
}

func fromBlocks(blocks []anthropicBlock, stop string) *Response {
	message := Message{Role: "assistant"}
	for _, block := range blocks {
		switch block.Type {
		case "text":
			message.Text += block.Text
		case "tool_use":
			message.Calls = append(message.Calls, ToolCall{ID: block.ID, Name: block.Name, Arguments: block.Input})
		}
	}
	return &Response{Message: message, StopReason: stop}
}

func (anthropic) decode(data []byte) (*Response, error) {
	var body struct {
		Content    []anthropicBlock `json:"content"`
		StopReason string           `json:"stop_reason"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, fmt.Errorf("anthropic: unreadable response: %s", data)
	}
	return fromBlocks(body.Content, body.StopReason), nil
}

// anthropicStream rebuilds each content block from its start, deltas and stop, by index.
type anthropicStream struct {
	blocks  map[int]*anthropicBlock
	partial map[int]string // a tool_use block's input, as JSON fragments
	stop    string
	done    bool
}

func (anthropic) newStream() streamAssembler {
	return &anthropicStream{blocks: map[int]*anthropicBlock{}, partial: map[int]string{}}
}

func (s *anthropicStream) feed(event map[string]json.RawMessage) error {
	var kind string
	_ = json.Unmarshal(event["type"], &kind)
	var index int
	_ = json.Unmarshal(event["index"], &index)
	switch kind {
	case "error":
		return fmt.Errorf("anthropic stream error: %s", errorMessage([]byte(`{"error":`+string(event["error"])+`}`)))
	case "content_block_start":
		var block anthropicBlock
		if err := json.Unmarshal(event["content_block"], &block); err != nil {
			return err
		}
		s.blocks[index] = &block
	case "content_block_delta":
		var delta struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
		}
		if err := json.Unmarshal(event["delta"], &delta); err != nil {
			return err
		}
		block, ok := s.blocks[index]
		if !ok {
			return fmt.Errorf("anthropic stream: a delta for block %d, which never started", index)
		}
		switch delta.Type {
		case "text_delta":
			block.Text += delta.Text
		case "input_json_delta":
			s.partial[index] += delta.PartialJSON
		}
	case "content_block_stop":
		if block, ok := s.blocks[index]; ok && block.Type == "tool_use" {
			block.Input = json.RawMessage(s.partial[index]) // parsed by whoever reads the arguments
		}
	case "message_delta":
		var delta struct {
			Delta struct {
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(event["delta"], &delta.Delta); err != nil {
			return err
		}
		s.stop = delta.Delta.StopReason
	case "message_stop":
		s.done = true
	}
	return nil
}

func (s *anthropicStream) response() (*Response, error) {
	if !s.done {
		return nil, fmt.Errorf("anthropic stream ended before message_stop")
	}
	indexes := make([]int, 0, len(s.blocks))
	for index := range s.blocks {
		indexes = append(indexes, index)
	}
	sort.Ints(indexes)
	blocks := make([]anthropicBlock, 0, len(indexes))
	for _, index := range indexes {
		blocks = append(blocks, *s.blocks[index])
	}
	return fromBlocks(blocks, s.stop), nil
}
