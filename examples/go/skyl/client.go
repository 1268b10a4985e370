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

// Client sends requests to one provider's API, in its wire format.
type Client struct {
	Wire    string // "openai" (Chat Completions) or "anthropic" (Messages)
	BaseURL string // OPENAI_BASE_URL or ANTHROPIC_BASE_URL
	APIKey  string
	Stream  bool // ask for a stream, and rebuild the turn from its events
	HTTP    *http.Client
}

// wire is what differs between providers: the request's JSON, the response's, the stream's events.
type wire interface {
	path() string
	body(req *Request, stream bool) any
	headers(h http.Header, apiKey string)
	decode(data []byte) (*Response, error)
	newStream() streamAssembler
}

// streamAssembler rebuilds the assistant turn from a stream's events ("data:" lines, decoded).
type streamAssembler interface {
	feed(event map[string]json.RawMessage) error
	response() (*Response, error)
}

func (c *Client) wire() (wire, error) {
	switch c.Wire {
	case "openai":
		return openAI{}, nil
	case "anthropic":
		return anthropic{}, nil
	}
	return nil, fmt.Errorf("this client speaks openai and anthropic, not %q", c.Wire)
}

// Complete sends the request and returns the model's next turn.
func (c *Client) Complete(ctx context.Context, req *Request) (*Response, error) {
	w, err := c.wire()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(w.body(req, c.Stream))
	if err != nil {
		return nil, err
	}
	httpReq, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(c.BaseURL, "/")+w.path(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("content-type", "application/json")
	w.headers(httpReq.Header, c.APIKey)
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(httpReq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s %d: %s", c.Wire, resp.StatusCode, errorMessage(data))
	}
	if !c.Stream {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		return w.decode(data)
	}
	return collect(resp.Body, w.newStream())
}

// collect reads a server-sent event stream to its end and hands each event to the assembler.
func collect(body io.Reader, assembler streamAssembler) (*Response, error) {
	lines := bufio.NewScanner(body)
	lines.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, "data:") {
			continue // event names, comments, the blank line between events
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			break
		}
		var event map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &event); err != nil {
			return nil, fmt.Errorf("unreadable stream event %q: %w", data, err)
		}
		if err := assembler.feed(event); err != nil {
			return nil, err
		}
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	return assembler.response()
}

// errorMessage is the provider's error message, or the whole body when it has none.
func errorMessage(data []byte) string {
	var envelope struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &envelope) == nil && envelope.Error.Message != "" {
		return envelope.Error.Message
	}
	return strings.TrimSpace(string(data))
}
