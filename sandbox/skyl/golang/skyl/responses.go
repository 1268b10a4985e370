package skyl

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// responses is the OpenAI Responses API: POST {OPENAI_BASE_URL}/responses. A turn is a list of
// output items; a reasoning model's starts with a reasoning item, and the items after it are
// linked to it by their ids, so each goes back whole: reasoning items as received, calls with
// their item id (ToolCall.Meta["item_id"]).
type responses struct{}

func (responses) endpoint(*Request, bool) string { return "/responses" }

func (responses) headers(h http.Header, apiKey string) { h.Set("authorization", "Bearer "+apiKey) }

func responsesText(role string, text string) map[string]any {
	if role == "assistant" {
		return map[string]any{"type": "message", "role": "assistant",
			"content": []map[string]string{{"type": "output_text", "text": text}}}
	}
	return map[string]any{"role": role, "content": text}
}

func (responses) body(req *Request, stream bool) (any, error) {
	input := []any{}
	for _, m := range req.Messages {
		pending := "" // a run of text parts makes one message item
		flush := func() {
			if pending != "" {
				input = append(input, responsesText(m.Role, pending))
				pending = ""
			}
		}
		for _, part := range m.Content {
			switch p := part.(type) {
			case Text:
				pending += p.Text
			case Reasoning:
				if p.Provider != "openai-responses" {
					return nil, foreign(p, "openai-responses")
				}
				flush()
				input = append(input, p.Payload) // exactly as the API sent it: id, summary, encrypted_content
			case ToolCall:
				flush()
				item := map[string]any{"type": "function_call", "call_id": p.ID, "name": p.Name, "arguments": string(arguments(p))}
				if id := p.Meta["item_id"]; id != "" {
					item["id"] = id // the API pairs by call_id; the item id links the call to its reasoning
				}
				input = append(input, item)
			case ToolResult:
				flush() // the Responses API has no error flag on a result: the text says it
				input = append(input, map[string]any{"type": "function_call_output", "call_id": p.CallID, "output": p.Content})
			}
		}
		flush()
	}
	body := map[string]any{"model": req.Model, "input": input}
	if req.System != "" {
		body["instructions"] = req.System
	}
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, tool := range req.Tools {
			// Function tools are strict unless told otherwise, and strict mode refuses most schemas.
			tools = append(tools, map[string]any{"type": "function", "name": tool.Name,
				"description": tool.Description, "parameters": tool.Parameters, "strict": false})
		}
		body["tools"] = tools
	}
	if req.MaxTokens > 0 {
		body["max_output_tokens"] = req.MaxTokens
	}
	if req.Reasoning {
		body["reasoning"] = map[string]string{"summary": "auto"}
	}
	if stream {
		body["stream"] = true
	}
	return body, nil
}

type responsesItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

type responsesObject struct {
	ID                string            `json:"id"`
	Model             string            `json:"model"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func responsesReasoning(raw json.RawMessage, item responsesItem) Reasoning {
	summary := ""
	for i, part := range item.Summary {
		if i > 0 {
			summary += "\n\n"
		}
		summary += part.Text
	}
	return Reasoning{Provider: "openai-responses", Summary: summary, Payload: raw}
}

// end is the turn's MessageEnd: the Responses API has no finish_reason, so the items and status tell.
func (r responsesObject) end(hasCalls, refusal bool) MessageEnd {
	end := MessageEnd{Model: r.Model, ID: r.ID, StopReason: StopEndTurn}
	if r.Usage != nil {
		end.Usage = Usage{r.Usage.InputTokens, r.Usage.OutputTokens}
	}
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		end.StopReason = StopMaxTokens
	case hasCalls:
		end.StopReason = StopToolUse
	case refusal:
		end.StopReason = StopRefusal
	}
	return end
}

func (responses) decode(data []byte) (*Response, error) {
	var body responsesObject
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, fmt.Errorf("openai-responses: unreadable response: %.300s", data)
	}
	if body.Status == "failed" && body.Error != nil {
		return nil, fmt.Errorf("openai-responses: the response failed: %s", body.Error.Message)
	}
	message := Message{Role: "assistant"}
	refusal := false
	for _, raw := range body.Output {
		var item responsesItem
		if err := json.Unmarshal(raw, &item); err != nil {
			return nil, fmt.Errorf("openai-responses: unreadable output item %.200s", raw)
		}
		switch item.Type {
		case "reasoning":
			message.Content = append(message.Content, responsesReasoning(raw, item))
		case "function_call":
			call := ToolCall{ID: item.CallID, Name: item.Name, Meta: map[string]string{"item_id": item.ID}}
			call.Arguments = arguments(ToolCall{Arguments: json.RawMessage(item.Arguments)})
			message.Content = append(message.Content, call)
		case "message":
			for _, content := range item.Content {
				switch content.Type {
				case "output_text":
					message.Content = append(message.Content, Text{content.Text})
				case "refusal":
					refusal = true
					message.Content = append(message.Content, Text{content.Refusal})
				}
			}
		}
	}
	end := body.end(len(message.ToolCalls()) > 0, refusal)
	return &Response{Message: message, StopReason: end.StopReason, Usage: end.Usage, Model: end.Model, ID: end.ID}, nil
}

// responsesStream: items are added, grow by deltas and are done, by output_index; the terminal
// event (response.completed or .incomplete) holds the whole response and ends the turn.
type responsesStream struct {
	calls     map[int]int // output_index -> the call's index in the turn
	reasoning map[int]int // output_index -> the reasoning part's index
	refusal   bool
	done      bool
}

func (responses) stream() streamDecoder {
	return &responsesStream{calls: map[int]int{}, reasoning: map[int]int{}}
}

func (s *responsesStream) close() []Event { return nil }

func (s *responsesStream) ended() bool { return s.done }

func (s *responsesStream) feed(name string, data []byte) ([]Event, error) {
	var event struct {
		Type        string          `json:"type"`
		OutputIndex int             `json:"output_index"`
		Item        json.RawMessage `json:"item"`
		Delta       string          `json:"delta"`
		Response    responsesObject `json:"response"`
	}
	if err := json.Unmarshal(data, &event); err != nil {
		return nil, fmt.Errorf("openai-responses stream: unreadable event %.200q: %w", data, err)
	}
	if event.Type == "" {
		event.Type = name
	}
	switch event.Type {
	case "error":
		return nil, fmt.Errorf("openai-responses stream error: %s", errorMessage(data))
	case "response.failed":
		message := "the response failed"
		if event.Response.Error != nil {
			message = event.Response.Error.Message
		}
		return nil, fmt.Errorf("openai-responses stream: %s", message)
	case "response.output_item.added":
		var item responsesItem
		if err := json.Unmarshal(event.Item, &item); err != nil {
			return nil, fmt.Errorf("openai-responses stream: unreadable item %.200s", event.Item)
		}
		switch item.Type {
		case "function_call":
			index := len(s.calls)
			s.calls[event.OutputIndex] = index
			return []Event{ToolCallStart{Index: index, ID: item.CallID, Name: item.Name,
				Meta: map[string]string{"item_id": item.ID}}}, nil
		case "reasoning":
			s.reasoning[event.OutputIndex] = len(s.reasoning)
		}
	case "response.output_text.delta", "response.refusal.delta":
		s.refusal = s.refusal || event.Type == "response.refusal.delta"
		if event.Delta != "" {
			return []Event{TextDelta{event.Delta}}, nil
		}
	case "response.function_call_arguments.delta":
		index, ok := s.calls[event.OutputIndex]
		if !ok {
			return nil, fmt.Errorf("openai-responses stream: arguments for output %d, which is not a started call", event.OutputIndex)
		}
		if event.Delta != "" {
			return []Event{ToolCallDelta{Index: index, Arguments: event.Delta}}, nil
		}
	case "response.reasoning_summary_text.delta":
		if index, ok := s.reasoning[event.OutputIndex]; ok && event.Delta != "" {
			return []Event{ReasoningDelta{Index: index, Text: event.Delta}}, nil
		}
	case "response.output_item.done":
		var item responsesItem
		if err := json.Unmarshal(event.Item, &item); err != nil {
			return nil, fmt.Errorf("openai-responses stream: unreadable item %.200s", event.Item)
		}
		switch item.Type {
		case "function_call":
			return []Event{ToolCallEnd{s.calls[event.OutputIndex]}}, nil
		case "reasoning":
			index, ok := s.reasoning[event.OutputIndex]
			if !ok {
				index = len(s.reasoning)
				s.reasoning[event.OutputIndex] = index
			}
			return []Event{ReasoningEnd{Index: index, Reasoning: responsesReasoning(event.Item, item)}}, nil
		}
	case "response.completed", "response.incomplete":
		s.done = true
		return []Event{event.Response.end(len(s.calls) > 0, s.refusal)}, nil
	}
	return nil, nil
}
