package skyl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Providers are the wire formats this client speaks, as SANDBOX_WIRE names them.
var Providers = []string{"openai", "openai-responses", "anthropic", "gemini"}

// Client sends requests to one provider's API, in its wire format.
type Client struct {
	Provider string // one of Providers
	BaseURL  string // OPENAI_BASE_URL (with /v1), ANTHROPIC_BASE_URL or GOOGLE_GEMINI_BASE_URL
	APIKey   string
	HTTP     *http.Client // nil: http.DefaultClient
}

// ProviderError is the provider's refusal of a request: its status and its own words.
type ProviderError struct {
	Provider string
	Status   int
	Message  string
	Body     []byte // the whole error body, as sent
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("%s %d: %s", e.Provider, e.Status, e.Message)
}

// wire is what differs between providers: the request's path and JSON, the response's, the stream's events.
type wire interface {
	endpoint(req *Request, stream bool) string // the path after the base URL
	body(req *Request, stream bool) (any, error)
	headers(h http.Header, apiKey string)
	decode(data []byte) (*Response, error)
	stream() streamDecoder
}

func wireFor(provider string) (wire, error) {
	switch provider {
	case "openai":
		return chat{}, nil
	case "openai-responses":
		return responses{}, nil
	case "anthropic":
		return anthropic{}, nil
	case "gemini":
		return gemini{}, nil
	}
	return nil, fmt.Errorf("skyl speaks %s, not %q", strings.Join(Providers, ", "), provider)
}

// Complete sends the request and returns the model's next turn.
func (c *Client) Complete(ctx context.Context, req *Request) (*Response, error) {
	w, body, err := c.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return w.decode(data)
}

// Stream sends the request asking for a stream, and returns its events as they arrive. There is no
// resp.Message on a stream: rebuild the turn from the events, or hand the stream to CollectStream.
func (c *Client) Stream(ctx context.Context, req *Request) (*Stream, error) {
	w, body, err := c.send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	return &Stream{body: body, sse: newSSEReader(body), decoder: w.stream(), provider: c.Provider}, nil
}

func (c *Client) send(ctx context.Context, req *Request, stream bool) (wire, io.ReadCloser, error) {
	w, err := wireFor(c.Provider)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCalls(req); err != nil {
		return nil, nil, err
	}
	body, err := w.body(req, stream)
	if err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	url := strings.TrimRight(c.BaseURL, "/") + w.endpoint(req, stream)
	httpReq, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	httpReq.Header.Set("content-type", "application/json")
	w.headers(httpReq.Header, c.APIKey)
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(httpReq)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, nil, &ProviderError{Provider: c.Provider, Status: resp.StatusCode, Message: errorMessage(data), Body: data}
	}
	return w, resp.Body, nil
}

// checkCalls refuses to send a call whose arguments are not one JSON object, saying which and why,
// before encoding/json would refuse it with a message about json.RawMessage.
func checkCalls(req *Request) error {
	for i, m := range req.Messages {
		for _, call := range m.ToolCalls() {
			var object map[string]json.RawMessage
			if json.Unmarshal(arguments(call), &object) != nil || object == nil {
				return fmt.Errorf("req.Messages[%d]: the arguments of call %s (id %s) are not a JSON object: %q. "+
					"A turn rebuilt from a stream joins all of a call's ToolCallDelta fragments, in order, "+
					"before parsing them (skyl.CollectStream does)", i, call.Name, call.ID, string(call.Arguments))
			}
		}
	}
	return nil
}

// errorMessage is the provider's error message, or the whole body when it has none.
func errorMessage(data []byte) string {
	var envelope struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"` // a Responses stream's `error` event has it at the top
	}
	if json.Unmarshal(data, &envelope) == nil {
		if envelope.Error.Message != "" {
			return envelope.Error.Message
		}
		if envelope.Message != "" {
			return envelope.Message
		}
	}
	return strings.TrimSpace(string(data))
}

// sseReader splits a server-sent event stream into events: an optional `event:` name and the
// `data:` lines, dispatched at each blank line. \n and \r\n line ends are both read.
type sseReader struct {
	lines *bufio.Scanner
	err   error
}

func newSSEReader(body io.Reader) *sseReader {
	lines := bufio.NewScanner(body)
	lines.Buffer(make([]byte, 64*1024), 16*1024*1024)
	return &sseReader{lines: lines}
}

// next is the next event; ok is false at the end of the stream (err says why, when it is an error).
func (r *sseReader) next() (name string, data []byte, ok bool) {
	var buffer []string
	for r.lines.Scan() {
		line := strings.TrimSuffix(r.lines.Text(), "\r")
		if line == "" {
			if len(buffer) > 0 {
				return name, []byte(strings.Join(buffer, "\n")), true
			}
			name = "" // an event without data is no event
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			buffer = append(buffer, value)
		}
	}
	r.err = r.lines.Err()
	if len(buffer) > 0 {
		return name, []byte(strings.Join(buffer, "\n")), true
	}
	return "", nil, false
}
