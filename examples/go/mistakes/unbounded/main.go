// Command unbounded is the lesson's loop without its bound: it asks the model again for as long
// as the model asks for tools. Against a runaway it never ends on its own; the sandbox's request
// budget stops it.
//
// sandbox grade fails it with the rule: "Loop until resp.ToolCalls() is empty, with a hard bound".
package main

import (
	"context"
	"fmt"
	"os"

	"skyl"
)

func complete(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	for {
		resp, err := client.Complete(ctx, req)
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
