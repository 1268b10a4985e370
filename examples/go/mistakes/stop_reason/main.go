// Command stop_reason ends the loop on the stop reason instead of the call list: it returns as soon
// as resp.StopReason is not skyl.StopToolUse. A turn can carry calls under another stop reason (a
// turn cut at max_tokens, a provider that reports "stop"), and then those calls are never run.
//
// sandbox grade fails it (challenge 06) with the rule: "Loop until resp.ToolCalls() is empty".
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
		if resp.StopReason != skyl.StopToolUse {
			return resp, nil // DON'T: the stop reason is the less reliable signal
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
