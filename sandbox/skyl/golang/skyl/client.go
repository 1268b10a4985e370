package skyl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
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

// ProviderError is the provider's refusal of a request (its status, its own name for the error, its
// words and its retry hint), or an answer that broke before it was whole (Status 0). Catch it with
// errors.As(err, &perr) to decide whether to retry: a 429, 503 or 529 and a Status 0 are worth another
// attempt after RetryAfter; a 400 is not.
type ProviderError struct {
	Provider   string
	Status     int           // the HTTP status; 0: the connection failed or broke before the answer was whole
	Type       string        // the provider's name for it: rate_limit_error, RESOURCE_EXHAUSTED, connection_error
	Message    string        // the provider's message, verbatim
	RetryAfter time.Duration // the provider's hint (retry-after-ms, retry-after, Gemini's retryDelay); 0: none
	Body       []byte        // the whole error body, as sent
}

func (e *ProviderError) Error() string {
	kind := ""
	if e.Type != "" {
		kind = " " + e.Type
	}
	return fmt.Sprintf("%s %d%s: %s", e.Provider, e.Status, kind, e.Message)
}

// broken is the error of an answer that did not arrive whole: nothing of it may be used.
func broken(provider, url string, err error) *ProviderError {
	return &ProviderError{Provider: provider, Type: "connection_error", Message: fmt.Sprintf(
		"the connection to %s closed before the answer was complete (%v): discard what arrived and send the "+
			"same request again", url, err)}
}

// providerError reads an error response: the message, the provider's error type (OpenAI's and
// Anthropic's error.type, Gemini's error.status) and the retry hint.
func providerError(provider string, resp *http.Response, data []byte) *ProviderError {
	var envelope struct {
		Error struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Details []struct {
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &envelope) // a body that is not JSON keeps its words in Message
	kind := envelope.Error.Type
	if kind == "" {
		kind = envelope.Error.Status
	}
	hint := retryHint(resp.Header)
	for _, detail := range envelope.Error.Details {
		if seconds, err := strconv.ParseFloat(strings.TrimSuffix(detail.RetryDelay, "s"), 64); hint == 0 && err == nil {
			hint = time.Duration(seconds * float64(time.Second))
		}
	}
	return &ProviderError{Provider: provider, Status: resp.StatusCode, Type: kind, Message: errorMessage(data),
		RetryAfter: hint, Body: data}
}

// retryHint reads retry-after-ms first, then retry-after in seconds, as the official SDKs do.
func retryHint(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.ParseFloat(h.Get("retry-after"), 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
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
		return nil, broken(c.Provider, c.BaseURL, err)
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
	return &Stream{body: body, sse: newSSEReader(body), decoder: w.stream(), provider: c.Provider, url: c.BaseURL}, nil
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
		if ctx.Err() != nil {
			return nil, nil, err
		}
		return nil, nil, broken(c.Provider, c.BaseURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, nil, providerError(c.Provider, resp, data)
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
	if r.err != nil {
		return "", nil, false // the connection broke: what is buffered is half an event
	}
	if len(buffer) > 0 {
		return name, []byte(strings.Join(buffer, "\n")), true
	}
	return "", nil, false
}
