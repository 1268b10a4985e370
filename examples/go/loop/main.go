// Command loop is the lesson's tool loop as a program `sandbox grade` can judge, on every
// challenge and all four wire formats:
//
//	go build -o loop ./loop && sandbox grade -- ./loop
//
// It is the lesson's complete(), plus what the later challenges add: with SANDBOX_STREAM=1 each turn
// is streamed and rebuilt with skyl.CollectStream (05), and the calls of a turn run on goroutines,
// their results appended in call order (08), and a model request the provider asks to retry (a 429,
// 503 or 529, or an answer that broke before its end) is sent again after its hint, at most 3 times
// in all (10). The answer goes to stdout; at the bound, or when the retries run out, the report goes
// to stderr and the exit status is 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"skyl"
)

const (
	maxToolRounds = 5
	maxAttempts   = 3                     // of one model request: the first and two retries
	backoff       = 50 * time.Millisecond // before the first retry when the provider gives no hint; doubled each time
)

var sandbox *skyl.Sandbox

func complete(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	var history []string
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

		// Then one tool message per call, in call order (the calls themselves run concurrently).
		for i, output := range runAll(calls) {
			history = append(history, calls[i].Name)
			req.Messages = append(req.Messages, skyl.ToolResultMessage(calls[i].ID, output))
		}
	}
	return nil, fmt.Errorf("gave up after %d tool rounds; call sequence was %v — "+
		"check what these tools return", maxToolRounds, history)
}

// ask is one model turn, tried up to maxAttempts times. Only the request is retried: the turn is
// appended and its tools run once, by complete, after an answer arrived whole.
func ask(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := askOnce(ctx, client, req)
		var perr *skyl.ProviderError
		if err == nil || !errors.As(err, &perr) || !retryable(perr.Status) {
			return resp, err // the answer, or an error another attempt would not change (a 400)
		}
		if attempt == maxAttempts {
			return nil, fmt.Errorf("gave up after %d attempts: the provider kept answering %d (%s): %s; "+
				"check the provider's status page and your rate limits", attempt, perr.Status, perr.Type, perr.Message)
		}
		wait := perr.RetryAfter
		if wait == 0 {
			wait = backoff << (attempt - 1)
		}
		if wait > 30*time.Second {
			wait = 30 * time.Second
		}
		time.Sleep(wait)
	}
}

// retryable: rate limited, unavailable, overloaded, or 0 (the answer broke before it was whole).
func retryable(status int) bool {
	return status == 0 || status == 429 || status == 503 || status == 529
}

// askOnce is one model request: client.Complete, or with SANDBOX_STREAM=1 a stream rebuilt into the
// same Response (there is no resp.Message on a stream). A stream that breaks is an error, never a turn.
func askOnce(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	if !sandbox.Stream {
		return client.Complete(ctx, req)
	}
	stream, err := client.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return skyl.CollectStream(stream)
}

// runAll runs the calls of one turn concurrently and returns their outputs in call order.
func runAll(calls []skyl.ToolCall) []string {
	outputs := make([]string, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func(i int, call skyl.ToolCall) {
			defer wg.Done()
			outputs[i] = run(call)
		}(i, call)
	}
	wg.Wait()
	return outputs
}

// run executes one call through the sandbox. A failing tool is information for the model, not a
// reason to stop: its error goes back as the call's result, worded as one.
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
