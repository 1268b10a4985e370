package skyl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

// Sandbox is the grader's side of the contract, read from the environment `sandbox grade` sets:
// which provider to speak and where, the model (the scenario), the prompt, whether to stream and
// to ask for reasoning, and the tools, which the sandbox describes and runs.
type Sandbox struct {
	BaseURL   string // SANDBOX_BASE_URL
	Wire      string // SANDBOX_WIRE: openai, openai-responses, anthropic or gemini
	Model     string // SANDBOX_MODEL
	Prompt    string // SANDBOX_PROMPT
	Stream    bool   // SANDBOX_STREAM=1: stream every request
	Reasoning bool   // SANDBOX_REASONING=1: ask the model to show its reasoning (Request.Reasoning)
}

// FromEnv reads the contract's variables.
func FromEnv() (*Sandbox, error) {
	sb := &Sandbox{
		BaseURL:   os.Getenv("SANDBOX_BASE_URL"),
		Wire:      os.Getenv("SANDBOX_WIRE"),
		Model:     os.Getenv("SANDBOX_MODEL"),
		Prompt:    os.Getenv("SANDBOX_PROMPT"),
		Stream:    os.Getenv("SANDBOX_STREAM") == "1",
		Reasoning: os.Getenv("SANDBOX_REASONING") == "1",
	}
	if sb.BaseURL == "" || sb.Wire == "" {
		return nil, fmt.Errorf("SANDBOX_BASE_URL and SANDBOX_WIRE are not set: run me with `sandbox grade -- ./loop`")
	}
	if _, err := wireFor(sb.Wire); err != nil {
		return nil, err
	}
	return sb, nil
}

// Client talks to the model in the wire format the grader asked for, at the URL the official SDKs read.
func (sb *Sandbox) Client() *Client {
	base := map[string]string{
		"openai":           os.Getenv("OPENAI_BASE_URL"),
		"openai-responses": os.Getenv("OPENAI_BASE_URL"),
		"anthropic":        os.Getenv("ANTHROPIC_BASE_URL"),
		"gemini":           os.Getenv("GOOGLE_GEMINI_BASE_URL"),
	}
	key := map[string]string{
		"openai":           os.Getenv("OPENAI_API_KEY"),
		"openai-responses": os.Getenv("OPENAI_API_KEY"),
		"anthropic":        os.Getenv("ANTHROPIC_API_KEY"),
		"gemini":           os.Getenv("GEMINI_API_KEY"),
	}
	return &Client{Provider: sb.Wire, BaseURL: base[sb.Wire], APIKey: key[sb.Wire]}
}

// Request is the conversation's first request: the prompt, the scenario's tools, the contract's settings.
func (sb *Sandbox) Request(tools []Tool) *Request {
	return &Request{Model: sb.Model, Messages: []Message{UserText(sb.Prompt)}, Tools: tools, Reasoning: sb.Reasoning}
}

// Tools asks the sandbox for the scenario's tools: names, descriptions, JSON schemas.
func (sb *Sandbox) Tools(ctx context.Context) ([]Tool, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", sb.BaseURL+"/tools", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var tools []Tool
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &tools) != nil {
		return nil, fmt.Errorf("GET %s/tools answered %d: %s", sb.BaseURL, resp.StatusCode, data)
	}
	return tools, nil
}

// Run executes one call through the sandbox: its output, or an error saying why the tool failed.
func (sb *Sandbox) Run(ctx context.Context, call ToolCall) (string, error) {
	body, err := json.Marshal(map[string]any{"name": call.Name, "arguments": arguments(call)})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", sb.BaseURL+"/tools/run", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var ran struct {
		Output *string `json:"output"`
		Error  string  `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ran); err != nil {
		return "", fmt.Errorf("reading the sandbox's answer for %s: %w", call.Name, err)
	}
	if ran.Output == nil {
		return "", fmt.Errorf("%s: %s", call.Name, ran.Error)
	}
	return *ran.Output, nil
}
