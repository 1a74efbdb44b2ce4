// A trigd worker in Go (docs/worker.md), with franz-go as the Kafka client: it runs
// program.args.command of each launch request on <prefix>launch.<target> with /bin/sh and
// reports started, heartbeats and the outcome on <prefix>events.program.
//
//	TRIGD_KAFKA=127.0.0.1:9092 go run . --target default
//
// Environment: TRIGD_KAFKA (default 127.0.0.1:9092), TRIGD_TOPIC_PREFIX (default trigd.),
// TRIGD_GROUP (default trigd; the consumer group is <group>-worker-<target>, as trigd-worker's).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Request is the part of a launch request this worker reads (docs/worker.md#launch-request).
type Request struct {
	RunID            string `json:"run_id"`
	Schedule         string `json:"schedule"`
	Attempt          int    `json:"attempt"`
	HeartbeatTimeout string `json:"heartbeat_timeout"`
	StartBy          string `json:"start_by"`
	Lineage          string `json:"lineage"`
	Program          struct {
		Name string                     `json:"name"`
		Args map[string]json.RawMessage `json:"args"`
	} `json:"program"`
}

// ended remembers, per run, the highest attempt trigd ended itself (the control topic).
type ended struct {
	mu      sync.Mutex
	attempt map[string]int
	status  map[string]string
}

func (e *ended) record(runID string, attempt int, status string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if attempt > e.attempt[runID] {
		e.attempt[runID] = attempt
		e.status[runID] = status
	}
}

func (e *ended) lookup(runID string) (int, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.attempt[runID], e.status[runID]
}

var durationPart = regexp.MustCompile(`(\d+)(ms|s|m|h|d)`)

// parseDuration reads trigd's durations ("2m", "1h30m", "500ms", "1d").
func parseDuration(text string) (time.Duration, error) {
	parts := durationPart.FindAllStringSubmatch(text, -1)
	joined := ""
	var total time.Duration
	for _, p := range parts {
		joined += p[0]
		n, _ := strconv.ParseInt(p[1], 10, 64)
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute,
			"h": time.Hour, "d": 24 * time.Hour}[p[2]]
		total += time.Duration(n) * unit
	}
	if len(parts) == 0 || joined != text {
		return 0, fmt.Errorf("not a duration: %q", text)
	}
	return total, nil
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "go-" + hex.EncodeToString(b)
}

type worker struct {
	client  *kgo.Client
	prefix  string
	id      string
	ended   *ended
	started map[string]bool // "run_id/attempt" already run
	commit  func()          // commits the request being run
}

// report produces one program event, keyed by the program name, and waits for the broker.
func (w *worker) report(ctx context.Context, r *Request, status string) error {
	payload := map[string]any{"program": r.Program.Name, "run_id": r.RunID, "status": status,
		"attempt": r.Attempt, "worker": w.id}
	if r.Lineage != "" {
		payload["lineage"] = r.Lineage
	}
	event, _ := json.Marshal(map[string]any{"id": newID(), "type": "program",
		"time": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "payload": payload})
	record := &kgo.Record{Topic: w.prefix + "events.program", Key: []byte(r.Program.Name), Value: event}
	return w.client.ProduceSync(ctx, record).FirstErr()
}

// run runs one request to its end and reports it; false when it was not started.
func (w *worker) run(ctx context.Context, r *Request) (bool, error) {
	key := fmt.Sprintf("%s/%d", r.RunID, r.Attempt)
	if w.started[key] {
		return false, nil // a request seen twice: run once
	}
	if attempt, status := w.ended.lookup(r.RunID); attempt >= r.Attempt {
		log.Printf("run %s attempt %d: not started: trigd ended attempt %d (%s)", r.RunID, r.Attempt, attempt, status)
		return false, nil
	}
	if r.StartBy != "" {
		if deadline, err := time.Parse(time.RFC3339Nano, r.StartBy); err == nil && time.Now().After(deadline) {
			log.Printf("run %s attempt %d: not started: past its start deadline %s", r.RunID, r.Attempt, r.StartBy)
			return false, nil
		}
	}
	w.started[key] = true
	var command string
	if raw, ok := r.Program.Args["command"]; ok {
		if err := json.Unmarshal(raw, &command); err != nil {
			log.Printf("run %s attempt %d: program.args.command is not a string", r.RunID, r.Attempt)
			return true, w.report(ctx, r, "failed")
		}
	}
	if err := w.report(ctx, r, "started"); err != nil {
		return true, err
	}
	w.commit() // the run has started: a worker that dies now does not run it again
	if command == "" {
		return true, w.report(ctx, r, "succeeded")
	}
	every := 5 * time.Minute / 3
	if timeout, err := parseDuration(r.HeartbeatTimeout); err == nil {
		every = max(timeout/3, 500*time.Millisecond)
	}
	child := exec.Command("/bin/sh", "-c", command)
	child.Env = append(os.Environ(), "TRIGD_RUN_ID="+r.RunID, "TRIGD_ATTEMPT="+strconv.Itoa(r.Attempt),
		"TRIGD_SCHEDULE="+r.Schedule)
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log.Printf("run %s attempt %d (%s) started", r.RunID, r.Attempt, r.Program.Name)
	if err := child.Start(); err != nil {
		log.Printf("run %s: %v", r.RunID, err)
		return true, w.report(ctx, r, "failed")
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			status := "succeeded"
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = "failed"
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					status = "killed"
				}
			} else if err != nil {
				status = "failed"
			}
			log.Printf("run %s attempt %d (%s) %s", r.RunID, r.Attempt, r.Program.Name, status)
			return true, w.report(ctx, r, status)
		case <-ticker.C:
			if err := w.report(ctx, r, "heartbeat"); err != nil {
				return true, err
			}
		case <-ctx.Done():
			_ = syscall.Kill(-child.Process.Pid, syscall.SIGTERM)
			<-done
			return true, w.report(context.Background(), r, "killed")
		}
	}
}

// readControl follows <prefix>control from its start, every partition, without a group, and
// closes caughtUp once a poll of a second brings nothing (the topic read to its end).
func readControl(ctx context.Context, brokers, topic string, e *ended, caughtUp chan<- struct{}) {
	client, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		log.Fatalf("control topic %s: %v", topic, err)
	}
	defer client.Close()
	signalled := false
	for ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := client.PollFetches(pollCtx)
		cancel()
		n := 0
		fetches.EachRecord(func(rec *kgo.Record) {
			n++
			var m struct {
				RunID   string `json:"run_id"`
				Attempt int    `json:"attempt"`
				Status  string `json:"status"`
				Reason  string `json:"reason"`
			}
			if json.Unmarshal(rec.Value, &m) == nil && m.RunID != "" {
				e.record(m.RunID, m.Attempt, m.Status+", reason "+m.Reason)
			}
		})
		if n == 0 && !signalled {
			signalled = true
			close(caughtUp)
		}
	}
}

func main() {
	target := flag.String("target", "default", "the pool of workers: requests on <prefix>launch.<target>")
	flag.Parse()
	log.SetFlags(log.LUTC | log.Ldate | log.Lmicroseconds)
	brokers := envOr("TRIGD_KAFKA", "127.0.0.1:9092")
	prefix := envOr("TRIGD_TOPIC_PREFIX", "trigd.")
	group := envOr("TRIGD_GROUP", "trigd") + "-worker-" + *target
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	e := &ended{attempt: map[string]int{}, status: map[string]string{}}
	caughtUp := make(chan struct{})
	go readControl(ctx, brokers, prefix+"control", e, caughtUp)
	select {
	case <-caughtUp:
	case <-ctx.Done():
		return
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(prefix+"launch."+*target), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		log.Fatalf("kafka: %v", err)
	}
	defer client.Close()
	host, _ := os.Hostname()
	w := &worker{client: client, prefix: prefix, id: fmt.Sprintf("%s:%d", host, os.Getpid()), ended: e,
		started: map[string]bool{}}
	log.Printf("consuming %slaunch.%s in group %s", prefix, *target, group)
	for ctx.Err() == nil {
		fetches := client.PollFetches(ctx)
		fetches.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Printf("fetch %s[%d]: %v", topic, partition, err)
			}
		})
		fetches.EachRecord(func(rec *kgo.Record) {
			commit := func() {
				if err := client.CommitRecords(context.Background(), rec); err != nil {
					log.Printf("commit: %v", err)
				}
			}
			w.commit = commit
			var r Request
			if err := json.Unmarshal(rec.Value, &r); err != nil || r.RunID == "" {
				log.Printf("%s[%d]@%d: not a launch request, skipped", rec.Topic, rec.Partition, rec.Offset)
			} else if _, err := w.run(ctx, &r); err != nil {
				log.Printf("run %s: report: %v", r.RunID, err)
			}
			commit() // refused or done (again for a started one: committing twice is harmless)
		})
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
