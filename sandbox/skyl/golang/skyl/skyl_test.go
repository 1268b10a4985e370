package skyl

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// stream is a Stream over a recorded body, decoded as provider would.
func stream(provider, body string) *Stream {
	w, err := wireFor(provider)
	if err != nil {
		panic(err)
	}
	reader := io.NopCloser(strings.NewReader(body))
	return &Stream{body: reader, sse: newSSEReader(reader), decoder: w.stream(), provider: provider}
}

func TestAnthropicStreamWithAZeroArgumentCallCollectsToAnEmptyObject(t *testing.T) {
	body := "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3}}}\r\n\r\n" +
		"event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n" +
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me \"}}\r\n\r\n" +
		"event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n" +
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"check.\"}}\r\n\r\n" +
		"event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_time\",\"input\":{}}}\r\n\r\n" +
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\r\n\r\n" +
		"event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":1}\r\n\r\n" +
		"event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\r\n\r\n" +
		"event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n"
	resp, err := CollectStream(stream("anthropic", body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Let me check." || resp.StopReason != StopToolUse || resp.ID != "msg_1" || resp.Usage.OutputTokens != 9 {
		t.Fatalf("unexpected turn: %+v", resp)
	}
	calls := resp.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "toolu_1" || string(calls[0].Arguments) != "{}" {
		t.Fatalf("unexpected calls: %+v", calls)
	}
	if _, isText := resp.Message.Content[0].(Text); !isText {
		t.Fatalf("the text came first on the stream, so it comes first in the turn: %+v", resp.Message.Content)
	}
}

func TestResponsesStreamKeepsTheReasoningItemWholeBeforeTheCall(t *testing.T) {
	reasoning := `{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"gAAA"}`
	events := []string{
		`{"type":"response.created","response":{"id":"resp_1","model":"m","status":"in_progress","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
		`{"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"think"}`,
		`{"type":"response.output_item.done","output_index":0,"item":` + reasoning + `}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":""}}`,
		`{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"a\":"}`,
		`{"type":"response.function_call_arguments.delta","output_index":1,"delta":"1}"}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}}`,
		`{"type":"response.completed","response":{"id":"resp_1","model":"m","status":"completed","output":[]}}`,
	}
	var body strings.Builder
	for _, event := range events {
		body.WriteString("event: x\ndata: " + event + "\n\n")
	}
	resp, err := CollectStream(stream("openai-responses", body.String()))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := resp.Message.Content[0].(Reasoning)
	if !ok || string(first.Payload) != reasoning || first.Summary != "think" {
		t.Fatalf("the reasoning item goes first, exactly as sent: %+v", resp.Message.Content)
	}
	call := resp.ToolCalls()[0]
	if call.Meta["item_id"] != "fc_1" || string(call.Arguments) != `{"a":1}` || resp.StopReason != StopToolUse {
		t.Fatalf("unexpected call: %+v (%s)", call, resp.StopReason)
	}
	body2, err := responses{}.body(&Request{Model: "m", Messages: []Message{resp.Message}}, false)
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := json.Marshal(body2)
	if !strings.Contains(string(sent), `"input":[`+reasoning+`,{"arguments":"{\"a\":1}","call_id":"call_1","id":"fc_1"`) {
		t.Fatalf("the turn goes back whole, reasoning first: %s", sent)
	}
}

func TestGeminiSignatureGoesBackOnTheFirstCall(t *testing.T) {
	chunk := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."},` +
		`{"functionCall":{"name":"a","args":{}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"b"}}]},"finishReason":"STOP"}],"responseId":"r1"}`
	resp, err := CollectStream(stream("gemini", "data: "+chunk+"\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != StopToolUse || len(resp.ToolCalls()) != 2 {
		t.Fatalf("a turn with calls reports StopToolUse whatever its finishReason: %+v", resp)
	}
	parts, err := geminiParts(resp.Message.Content)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(parts))
	for i, part := range parts {
		got[i] = string(part)
	}
	want := []string{`{"text":"Checking."}`, `{"thoughtSignature":"c2ln","functionCall":{"name":"a","args":{}}}`,
		`{"functionCall":{"name":"b","args":{}}}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("parts sent back:\n got %v\nwant %v", got, want)
	}
}

func TestAStreamThatStopsEarlySaysSo(t *testing.T) {
	body := "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
	_, err := CollectStream(stream("openai", body))
	if err == nil || !strings.Contains(err.Error(), "ended before the turn did") {
		t.Fatalf("want an error naming the cut, got %v", err)
	}
}

func TestArgumentsThatAreNotJSONAreRefusedBeforeSending(t *testing.T) {
	turn := Message{Role: "assistant", Content: []Part{ToolCall{ID: "c1", Name: "f", Arguments: json.RawMessage(`"}`)}}}
	err := checkCalls(&Request{Messages: []Message{UserText("hi"), turn}})
	if err == nil || !strings.Contains(err.Error(), `req.Messages[1]: the arguments of call f (id c1) are not a JSON object: "\"}"`) {
		t.Fatalf("want the call and its text named, got %v", err)
	}
}
