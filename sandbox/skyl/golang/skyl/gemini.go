package skyl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// gemini is the Gemini API: POST {GOOGLE_GEMINI_BASE_URL}/v1beta/models/{model}:generateContent,
// or :streamGenerateContent?alt=sse. A thinking model puts a thoughtSignature beside the first
// functionCall of a turn; skyl keeps it as a Reasoning part before that call, and puts it back there.
// Calls usually come without ids: Gemini pairs a turn's results with its calls by their order.
type gemini struct{}

// localID marks the ids skyl makes up for calls Gemini sent without one: they are never sent back.
const localID = "skyl_call_"

var callCount int64

func (gemini) endpoint(req *Request, stream bool) string {
	model := url.PathEscape(strings.TrimPrefix(req.Model, "models/"))
	if stream {
		return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
	}
	return "/v1beta/models/" + model + ":generateContent"
}

func (gemini) headers(h http.Header, apiKey string) { h.Set("x-goog-api-key", apiKey) }

type geminiPart struct {
	Text             *string       `json:"text,omitempty"`
	Thought          bool          `json:"thought,omitempty"`
	ThoughtSignature string        `json:"thoughtSignature,omitempty"`
	FunctionCall     *geminiCall   `json:"functionCall,omitempty"`
	FunctionResponse *geminiResult `json:"functionResponse,omitempty"`
}

type geminiCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiResult struct {
	ID       string            `json:"id,omitempty"`
	Name     string            `json:"name"`
	Response map[string]string `json:"response"`
}

type geminiContent struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

func (gemini) body(req *Request, stream bool) (any, error) {
	contents := []geminiContent{}
	var results []json.RawMessage
	system := []map[string]string{}
	if req.System != "" {
		system = append(system, map[string]string{"text": req.System})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system":
			system = append(system, map[string]string{"text": m.Text()})
			continue
		case "tool":
			// Consecutive results make ONE user content: Gemini pairs them with the calls by count.
			for _, result := range m.ToolResults() {
				results = append(results, mustJSON(geminiPart{FunctionResponse: functionResponse(result, req.Messages[:i])}))
			}
			continue
		}
		if len(results) > 0 {
			contents = append(contents, geminiContent{Role: "user", Parts: results})
			results = nil
		}
		role := "user"
		if m.Role == "assistant" {
			role = "model"
		}
		parts, err := geminiParts(m.Content)
		if err != nil {
			return nil, err
		}
		contents = append(contents, geminiContent{Role: role, Parts: parts})
	}
	if len(results) > 0 {
		contents = append(contents, geminiContent{Role: "user", Parts: results})
	}
	body := map[string]any{"contents": contents}
	if len(system) > 0 {
		body["systemInstruction"] = map[string]any{"parts": system}
	}
	if len(req.Tools) > 0 {
		declarations := make([]map[string]any, 0, len(req.Tools))
		for _, tool := range req.Tools {
			// parametersJsonSchema takes full JSON Schema; `parameters` refuses keys such as additionalProperties.
			declarations = append(declarations, map[string]any{"name": tool.Name, "description": tool.Description,
				"parametersJsonSchema": tool.Parameters})
		}
		body["tools"] = []map[string]any{{"functionDeclarations": declarations}}
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = 1024
	}
	config := map[string]any{"maxOutputTokens": maxTokens}
	if req.Reasoning {
		config["thinkingConfig"] = map[string]bool{"includeThoughts": true}
	}
	body["generationConfig"] = config
	return body, nil
}

// geminiParts is a turn's parts on the wire: each signature goes back on the first call after it
// (or, in a turn without calls, on the next part), each thought part as it came.
func geminiParts(content []Part) ([]json.RawMessage, error) {
	var parts []json.RawMessage
	var outs []*geminiPart
	pending := ""
	for position, part := range content {
		var out *geminiPart
		switch p := part.(type) {
		case Reasoning:
			if p.Provider != "gemini" {
				return nil, foreign(p, "gemini")
			}
			var signature struct {
				ThoughtSignature string `json:"thoughtSignature"`
			}
			var fields map[string]json.RawMessage
			_ = json.Unmarshal(p.Payload, &fields)
			if len(fields) == 1 && json.Unmarshal(p.Payload, &signature) == nil && signature.ThoughtSignature != "" {
				pending = signature.ThoughtSignature
			} else {
				parts, outs = append(parts, p.Payload), append(outs, nil)
			}
			continue
		case Text:
			if p.Text == "" {
				continue // an empty text part is an unset part to Gemini
			}
			text := p.Text
			out = &geminiPart{Text: &text}
		case ToolCall:
			call := &geminiCall{Name: p.Name, Args: arguments(p)}
			if !strings.HasPrefix(p.ID, localID) {
				call.ID = p.ID
			}
			out = &geminiPart{FunctionCall: call}
		default:
			continue
		}
		if pending != "" && (out.FunctionCall != nil || !callsAfter(content[position+1:])) {
			out.ThoughtSignature, pending = pending, ""
		}
		parts, outs = append(parts, nil), append(outs, out)
	}
	if pending != "" {
		if len(outs) > 0 && outs[len(outs)-1] != nil {
			outs[len(outs)-1].ThoughtSignature = pending
		} else {
			empty := ""
			parts, outs = append(parts, nil), append(outs, &geminiPart{Text: &empty, ThoughtSignature: pending})
		}
	}
	for i, out := range outs {
		if out != nil {
			parts[i] = mustJSON(out)
		}
	}
	if parts == nil {
		parts = []json.RawMessage{}
	}
	return parts, nil
}

func callsAfter(content []Part) bool {
	for _, part := range content {
		if _, ok := part.(ToolCall); ok {
			return true
		}
	}
	return false
}

// functionResponse names the result after the call it answers, found in the turns before it.
func functionResponse(result ToolResult, earlier []Message) *geminiResult {
	name := result.CallID
	for i := len(earlier) - 1; i >= 0 && name == result.CallID; i-- {
		for _, call := range earlier[i].ToolCalls() {
			if call.ID == result.CallID {
				name = call.Name
			}
		}
	}
	key := "result"
	if result.IsError {
		key = "error"
	}
	response := &geminiResult{Name: name, Response: map[string]string{key: result.Content}}
	if !strings.HasPrefix(result.CallID, localID) {
		response.ID = result.CallID
	}
	return response
}

type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string           `json:"modelVersion"`
	ResponseID   string           `json:"responseId"`
	Error        *json.RawMessage `json:"error"`
}

func geminiStop(finish string, hasCalls bool) StopReason {
	switch {
	case hasCalls:
		return StopToolUse // whatever finishReason says: Gemini reports STOP for calls
	case finish == "STOP":
		return StopEndTurn
	case finish == "MAX_TOKENS":
		return StopMaxTokens
	case finish == "SAFETY" || finish == "RECITATION" || finish == "BLOCKLIST" || finish == "PROHIBITED_CONTENT" || finish == "SPII":
		return StopRefusal
	}
	return StopOther
}

// geminiRead is one response part as skyl parts: the reasoning it carries (a thought part whole, or
// its signature alone), then its call or text.
func geminiRead(raw json.RawMessage) ([]Part, error) {
	var part geminiPart
	if err := json.Unmarshal(raw, &part); err != nil {
		return nil, fmt.Errorf("gemini: unreadable part %.200s", raw)
	}
	var parts []Part
	if part.Thought {
		summary := ""
		if part.Text != nil {
			summary = *part.Text
		}
		return []Part{Reasoning{Provider: "gemini", Summary: summary, Payload: raw}}, nil
	}
	if part.ThoughtSignature != "" {
		payload := mustJSON(map[string]string{"thoughtSignature": part.ThoughtSignature})
		parts = append(parts, Reasoning{Provider: "gemini", Payload: payload})
	}
	switch {
	case part.FunctionCall != nil:
		id := part.FunctionCall.ID
		if id == "" {
			id = fmt.Sprintf("%s%d", localID, atomic.AddInt64(&callCount, 1))
		}
		call := ToolCall{ID: id, Name: part.FunctionCall.Name, Arguments: part.FunctionCall.Args}
		call.Arguments = arguments(call)
		parts = append(parts, call)
	case part.Text != nil && *part.Text != "":
		parts = append(parts, Text{*part.Text})
	}
	return parts, nil
}

func (c geminiChunk) read() ([]Part, string, error) {
	if len(c.Candidates) == 0 {
		return nil, "", nil
	}
	var parts []Part
	for _, raw := range c.Candidates[0].Content.Parts {
		read, err := geminiRead(raw)
		if err != nil {
			return nil, "", err
		}
		parts = append(parts, read...)
	}
	return parts, c.Candidates[0].FinishReason, nil
}

func (c geminiChunk) end(finish string, hasCalls bool) MessageEnd {
	stop := geminiStop(finish, hasCalls)
	if len(c.Candidates) == 0 && c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
		stop = StopRefusal
	}
	return MessageEnd{StopReason: stop, Model: c.ModelVersion, ID: c.ResponseID,
		Usage: Usage{c.UsageMetadata.PromptTokenCount, c.UsageMetadata.CandidatesTokenCount}}
}

func (gemini) decode(data []byte) (*Response, error) {
	var chunk geminiChunk
	if err := json.Unmarshal(data, &chunk); err != nil {
		return nil, fmt.Errorf("gemini: unreadable response: %.300s", data)
	}
	parts, finish, err := chunk.read()
	if err != nil {
		return nil, err
	}
	message := Message{Role: "assistant", Content: parts}
	end := chunk.end(finish, len(message.ToolCalls()) > 0)
	return &Response{Message: message, StopReason: end.StopReason, Usage: end.Usage, Model: end.Model, ID: end.ID}, nil
}

// geminiStream: each event is a whole GenerateContentResponse holding only the new parts; a call
// arrives whole; the chunk with a finishReason (or a blocked prompt) ends the turn.
type geminiStream struct {
	calls     int
	reasoning int
	done      bool
}

func (gemini) stream() streamDecoder { return &geminiStream{} }

func (s *geminiStream) close() []Event { return nil }

func (s *geminiStream) ended() bool { return s.done }

func (s *geminiStream) feed(_ string, data []byte) ([]Event, error) {
	var chunk geminiChunk
	if err := json.Unmarshal(data, &chunk); err != nil {
		return nil, fmt.Errorf("gemini stream: unreadable chunk %.200q: %w", data, err)
	}
	if chunk.Error != nil {
		return nil, fmt.Errorf("gemini stream error: %s", errorMessage(data))
	}
	parts, finish, err := chunk.read()
	if err != nil {
		return nil, err
	}
	var events []Event
	for _, part := range parts {
		switch p := part.(type) {
		case Reasoning:
			if p.Summary != "" {
				events = append(events, ReasoningDelta{Index: s.reasoning, Text: p.Summary})
			}
			events = append(events, ReasoningEnd{Index: s.reasoning, Reasoning: p})
			s.reasoning++
		case ToolCall:
			events = append(events, ToolCallStart{Index: s.calls, ID: p.ID, Name: p.Name},
				ToolCallDelta{Index: s.calls, Arguments: string(arguments(p))}, ToolCallEnd{Index: s.calls})
			s.calls++
		case Text:
			events = append(events, TextDelta{p.Text})
		}
	}
	blocked := len(chunk.Candidates) == 0 && chunk.PromptFeedback != nil && chunk.PromptFeedback.BlockReason != ""
	if finish != "" || blocked {
		s.done = true
		events = append(events, chunk.end(finish, s.calls > 0))
	}
	return events, nil
}
