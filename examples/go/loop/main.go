// Command loop is the lesson's tool loop as a program `sandbox grade` can judge:
//
//	go build -o loop ./loop && sandbox grade -- ./loop
//
// It asks the model, runs the tools it calls, and sends the results back until the model stops
// asking, at most maxToolRounds times. The answer goes to stdout; at the bound, the report goes to
// stderr and the exit status is 1.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"toolloop/skyl"
)

const maxToolRounds = 5

func complete(ctx context.Context, client *skyl.Client, tools *skyl.Sandbox, req *skyl.Request) (*skyl.Response, error) {
	var history []string
	for round := 0; round < maxToolRounds; round++ {
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

		// Then one tool message per call, in call order (the calls themselves run concurrently).
		for i, result := range runAll(ctx, tools, calls) {
			history = append(history, calls[i].Name)
			req.Messages = append(req.Messages, result)
		}
	}
	return nil, fmt.Errorf("gave up after %d tool rounds; call sequence was %v — "+
		"check what these tools return", maxToolRounds, history)
}

// runAll runs the calls of one turn concurrently and returns their results in call order.
func runAll(ctx context.Context, tools *skyl.Sandbox, calls []skyl.ToolCall) []skyl.Message {
	results := make([]skyl.Message, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func(i int, call skyl.ToolCall) {
			defer wg.Done()
			results[i] = run(ctx, tools, call)
		}(i, call)
	}
	wg.Wait()
	return results
}

// run executes one call. A failing tool is information for the model, not a reason to stop:
// the failure goes back as the call's result, marked as an error.
func run(ctx context.Context, tools *skyl.Sandbox, call skyl.ToolCall) skyl.Message {
	out, err := tools.Run(ctx, call)
	if err != nil {
		return skyl.ToolErrorMessage(call.ID, "ERROR: "+err.Error())
	}
	return skyl.ToolResultMessage(call.ID, out)
}

func main() {
	ctx := context.Background()
	sandbox, err := skyl.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tools, err := sandbox.Tools(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	req := &skyl.Request{
		Model:    sandbox.Model,
		Messages: []skyl.Message{skyl.UserText(sandbox.Prompt)},
		Tools:    tools,
	}
	resp, err := complete(ctx, sandbox.Client(), sandbox, req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(resp.Text())
}
