// Command last_fragment streams every turn and rebuilds it by hand, but keeps only the last fragment
// of the turn's text and of each call's arguments instead of joining them: it prints the end of the
// answer, and its calls' arguments are no longer JSON, which skyl refuses to send.
//
// sandbox grade fails it (challenge 05) with the rule: "There is no resp.Message on a stream:
// rebuild the turn from the events you saw".
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"skyl"
)

const maxToolRounds = 5

func complete(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	for round := 0; round < maxToolRounds; round++ {
		resp, err := ask(ctx, client, req)
		if err != nil {
			return nil, err
		}

		calls := resp.ToolCalls()
		if len(calls) == 0 {
			return resp, nil // the model is done
		}

		// The assistant's turn goes first, once, even for several calls.
		req.Messages = append(req.Messages, resp.Message)

		// Then one tool message per call.
		for _, call := range calls {
			req.Messages = append(req.Messages,
				skyl.ToolResultMessage(call.ID, run(call)))
		}
	}
	return nil, fmt.Errorf("gave up after %d tool rounds", maxToolRounds)
}

// ask streams the turn and rebuilds it from its events by hand.
func ask(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	stream, err := client.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	var text string
	var calls []skyl.ToolCall
	var arguments []string
	for stream.Next() {
		switch event := stream.Event().(type) {
		case skyl.TextDelta:
			text = event.Text // DON'T: this keeps the last fragment; join them (text += event.Text)
		case skyl.ToolCallStart:
			calls = append(calls, skyl.ToolCall{ID: event.ID, Name: event.Name, Meta: event.Meta})
			arguments = append(arguments, "")
		case skyl.ToolCallDelta:
			arguments[event.Index] = event.Arguments // DON'T: the same mistake with the arguments
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	message := skyl.Message{Role: "assistant"}
	if text != "" {
		message.Content = append(message.Content, skyl.Text{Text: text})
	}
	for i, call := range calls {
		call.Arguments = json.RawMessage(arguments[i])
		message.Content = append(message.Content, call)
	}
	return &skyl.Response{Message: message}, nil
}

var sandbox *skyl.Sandbox

// run executes one call through the sandbox; a failing tool's error goes back as its result.
func run(call skyl.ToolCall) string {
	out, err := sandbox.Run(context.Background(), call)
	if err != nil {
		return "ERROR: " + err.Error()
	}
	return out
}

func main() {
	ctx := context.Background()
	var err error
	if sandbox, err = skyl.FromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tools, err := sandbox.Tools(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	resp, err := complete(ctx, sandbox.Client(), sandbox.Request(tools))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(resp.Text())
}
