package skyl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Event is one event of a stream, the same for every provider: TextDelta, ReasoningDelta,
// ReasoningEnd, ToolCallStart, ToolCallDelta, ToolCallEnd or MessageEnd. Tool-call events carry the
// call's Index within the turn, so fragments of different calls are never confused.
type Event interface{ isEvent() }

// TextDelta is a fragment of the turn's prose.
type TextDelta struct{ Text string }

// ReasoningDelta is a fragment of reasoning part Index's readable text: for display only.
type ReasoningDelta struct {
	Index int
	Text  string
}

// ReasoningEnd says reasoning part Index is complete: Reasoning is the part to keep, in its place
// before the calls it led to.
type ReasoningEnd struct {
	Index     int
	Reasoning Reasoning
}

// ToolCallStart begins call Index: its id and name are known, its arguments follow in fragments.
type ToolCallStart struct {
	Index int
	ID    string
	Name  string
	Meta  map[string]string // keep it on the rebuilt call (ToolCall.Meta)
}

// ToolCallDelta is a fragment of the JSON text of call Index's arguments. Join them, then parse.
type ToolCallDelta struct {
	Index     int
	Arguments string
}

// ToolCallEnd says call Index has all its argument fragments.
type ToolCallEnd struct{ Index int }

// MessageEnd says the turn is over.
type MessageEnd struct {
	StopReason StopReason
	Usage      Usage
	Model      string
	ID         string
}

func (TextDelta) isEvent()      {}
func (ReasoningDelta) isEvent() {}
func (ReasoningEnd) isEvent()   {}
func (ToolCallStart) isEvent()  {}
func (ToolCallDelta) isEvent()  {}
func (ToolCallEnd) isEvent()    {}
func (MessageEnd) isEvent()     {}

// streamDecoder turns one provider's server-sent events into skyl events.
type streamDecoder interface {
	// feed takes one event: its `event:` name (often empty) and its data.
	feed(name string, data []byte) ([]Event, error)
	// close is the end of the stream (or OpenAI's [DONE]): the events still held back.
	close() []Event
	// ended says whether the provider's own end of the turn has arrived.
	ended() bool
}

// Stream is the events of one streamed turn, read as they arrive:
//
//	for stream.Next() {
//		switch event := stream.Event().(type) {
//		case skyl.TextDelta:
//			...
//		}
//	}
//	if err := stream.Err(); err != nil { ... }
type Stream struct {
	body     io.ReadCloser
	sse      *sseReader
	decoder  streamDecoder
	provider string
	url      string
	queue    []Event
	event    Event
	err      error
	done     bool
}

// Next advances to the next event; false at the end of the stream or on an error (see Err).
func (s *Stream) Next() bool {
	for len(s.queue) == 0 {
		if s.done {
			return false
		}
		name, data, ok := s.sse.next()
		if !ok || bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			s.queue = s.decoder.close()
			if s.sse.err != nil {
				s.finish(broken(s.provider, s.url, s.sse.err)) // the connection broke mid-stream
			} else {
				s.finish(nil)
			}
			continue
		}
		events, err := s.decoder.feed(name, data)
		if err != nil {
			s.finish(err)
			return false
		}
		s.queue = events
	}
	s.event, s.queue = s.queue[0], s.queue[1:]
	return true
}

// finish ends the stream: with err, or with a broken answer (a *ProviderError, Status 0) when the
// provider's end of the turn never came.
func (s *Stream) finish(err error) {
	s.done = true
	if err == nil && !s.decoder.ended() {
		err = broken(s.provider, s.url, fmt.Errorf("%s stream ended before the turn did (no end-of-message event)", s.provider))
	}
	if err != nil {
		s.queue = nil
	}
	s.err = err
	s.body.Close()
}

// Event is the current event, after Next returned true.
func (s *Stream) Event() Event { return s.event }

// Err is what ended the stream early, or nil when it ended with the turn.
func (s *Stream) Err() error { return s.err }

// Close stops reading; the rest of the stream is dropped.
func (s *Stream) Close() error {
	s.done = true
	return s.body.Close()
}

// Collector rebuilds a turn from its events: feed them in order, then ask for the Response. Parts
// come back in the order the stream first announced them (reasoning before the calls it led to);
// the text of a turn is joined into one part, where its first fragment arrived.
type Collector struct {
	text      strings.Builder
	sawText   bool
	calls     map[int]*pendingCall
	reasoning map[int]Reasoning
	order     []slot
	end       *MessageEnd
}

type slot struct {
	kind  string // "text", "call" or "reasoning"
	index int
}

type pendingCall struct {
	start     ToolCallStart
	arguments strings.Builder
}

// Feed takes the next event of the stream.
func (c *Collector) Feed(event Event) error {
	if c.calls == nil {
		c.calls, c.reasoning = map[int]*pendingCall{}, map[int]Reasoning{}
	}
	switch e := event.(type) {
	case TextDelta:
		if !c.sawText {
			c.sawText = true
			c.order = append(c.order, slot{"text", 0})
		}
		c.text.WriteString(e.Text)
	case ReasoningEnd:
		if _, seen := c.reasoning[e.Index]; !seen {
			c.order = append(c.order, slot{"reasoning", e.Index})
		}
		c.reasoning[e.Index] = e.Reasoning
	case ToolCallStart:
		if _, seen := c.calls[e.Index]; !seen {
			c.order = append(c.order, slot{"call", e.Index})
		}
		c.calls[e.Index] = &pendingCall{start: e}
	case ToolCallDelta:
		call, ok := c.calls[e.Index]
		if !ok {
			return fmt.Errorf("the stream sent arguments for tool call %d before announcing that call", e.Index)
		}
		call.arguments.WriteString(e.Arguments)
	case MessageEnd:
		end := e
		c.end = &end
	}
	return nil
}

// Response is the turn the events carried, exactly as client.Complete would have returned it.
func (c *Collector) Response() (*Response, error) {
	if c.end == nil {
		return nil, fmt.Errorf("the stream ended without a MessageEnd event, so the turn is incomplete")
	}
	message := Message{Role: "assistant"}
	for _, s := range c.order {
		switch s.kind {
		case "text":
			if c.text.Len() > 0 {
				message.Content = append(message.Content, Text{c.text.String()})
			}
		case "reasoning":
			message.Content = append(message.Content, c.reasoning[s.index])
		case "call":
			call, err := c.calls[s.index].finish()
			if err != nil {
				return nil, err
			}
			message.Content = append(message.Content, call)
		}
	}
	end := c.end
	return &Response{Message: message, StopReason: end.StopReason, Usage: end.Usage, Model: end.Model, ID: end.ID}, nil
}

// finish checks the joined fragments are one JSON object: a call with no arguments has "{}".
func (p *pendingCall) finish() (ToolCall, error) {
	text := strings.TrimSpace(p.arguments.String())
	if text == "" {
		text = "{}"
	}
	var object map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &object); err != nil || object == nil {
		return ToolCall{}, fmt.Errorf("the arguments streamed for tool call %q (id %q) are not a JSON object: %q",
			p.start.Name, p.start.ID, text)
	}
	return ToolCall{ID: p.start.ID, Name: p.start.Name, Arguments: json.RawMessage(text), Meta: p.start.Meta}, nil
}

// CollectStream reads the stream to its end and returns the turn it carried: what client.Complete
// would have returned. The lesson's shortcut for a loop that streams.
func CollectStream(stream *Stream) (*Response, error) {
	var collector Collector
	for stream.Next() {
		if err := collector.Feed(stream.Event()); err != nil {
			stream.Close()
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return collector.Response()
}
