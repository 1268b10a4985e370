// Command assistant_text makes the lesson's ordering mistake: it appends a reconstruction of the
// assistant's turn, skyl.AssistantText(resp.Text()), instead of resp.Message. The prose survives,
// the tool calls do not, so the results appended next answer nothing and the provider says 400.
//
// sandbox grade fails it with the rule: "Append resp.Message before any tool result".
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

		// DON'T: AssistantText keeps the prose and silently drops the tool calls,
		// so the result you append next has nothing to answer.
		req.Messages = append(req.Messages, skyl.AssistantText(resp.Text()))

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
