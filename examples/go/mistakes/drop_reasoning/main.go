// Command drop_reasoning appends a turn it rebuilt from resp.Text() and resp.ToolCalls() instead of
// resp.Message. Against a reasoning model that loses the reasoning the turn carried (a Responses
// reasoning item, an Anthropic thinking block, a Gemini thought signature), and the provider refuses
// the next request.
//
// sandbox grade fails it (challenge 09) with the rule: "Append resp.Message itself: a reasoning
// model's turn goes back whole".
package main

import (
	"context"
	"fmt"
	"os"

	"skyl"
)

const maxToolRounds = 5

func complete(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	for round := 0; round < maxToolRounds; round++ {
		resp, err := client.Complete(ctx, req)
		if err != nil {
			return nil, err
		}

		calls := resp.ToolCalls()
		if len(calls) == 0 {
			return resp, nil // the model is done
		}

		// DON'T: a turn rebuilt from its text and calls loses the reasoning it carried.
		turn := skyl.Message{Role: "assistant", Content: []skyl.Part{skyl.Text{Text: resp.Text()}}}
		for _, call := range calls {
			turn.Content = append(turn.Content, call)
		}
		req.Messages = append(req.Messages, turn)

		// Then one tool message per call.
		for _, call := range calls {
			req.Messages = append(req.Messages,
				skyl.ToolResultMessage(call.ID, run(call)))
		}
	}
	return nil, fmt.Errorf("gave up after %d tool rounds", maxToolRounds)
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
