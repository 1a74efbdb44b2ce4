// Command river-bench is the peer of trigd's launch benchmark: River (the PostgreSQL job queue
// for Go) on the same PostgreSQL server, in its own database. Each round inserts --jobs jobs
// with InsertMany (not timed), then starts a River client with a no-op worker and times until
// River has recorded every job as completed (its completer's UPDATE committed), read from the
// job table. It prints one line per round and, last, one JSON object:
// {"jobs_per_second": median, "rounds": [...], "river": version, ...}.
//
// Usage: river-bench --database-url URL [--jobs 50000] [--rounds 3] [--workers 1000]
// [--fetch-cooldown 1ms]. The database must exist; River's migrations are applied to it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type NoopArgs struct{}

func (NoopArgs) Kind() string { return "noop" }

type NoopWorker struct {
	river.WorkerDefaults[NoopArgs]
}

func (*NoopWorker) Work(context.Context, *river.Job[NoopArgs]) error { return nil }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "river-bench: "+format+"\n", args...)
	os.Exit(1)
}

func riverVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/riverqueue/river" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func main() {
	url := flag.String("database-url", "", "PostgreSQL URL of River's own database")
	jobs := flag.Int("jobs", 50000, "jobs inserted and worked per round")
	rounds := flag.Int("rounds", 3, "rounds (the median is reported)")
	workers := flag.Int("workers", 1000, "MaxWorkers of the queue (also River's fetch size)")
	cooldown := flag.Duration("fetch-cooldown", time.Millisecond, "River's FetchCooldown")
	flag.Parse()
	if *url == "" {
		fail("--database-url is required")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, *url)
	if err != nil {
		fail("connect: %v", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		fail("migrator: %v", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		fail("migrate: %v", err)
	}

	var rates []float64
	for round := 1; round <= *rounds; round++ {
		if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
			fail("truncate: %v", err)
		}
		workersSet := river.NewWorkers()
		river.AddWorker(workersSet, &NoopWorker{})
		client, err := river.NewClient(driver, &river.Config{
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
			Workers:           workersSet,
			FetchCooldown:     *cooldown,
			FetchPollInterval: max(*cooldown, 50*time.Millisecond),
			Logger:            nil,
		})
		if err != nil {
			fail("client: %v", err)
		}
		params := make([]river.InsertManyParams, 0, 5000)
		for inserted := 0; inserted < *jobs; inserted += len(params) {
			params = params[:0]
			for i := inserted; i < *jobs && len(params) < 5000; i++ {
				params = append(params, river.InsertManyParams{Args: NoopArgs{}})
			}
			if _, err := client.InsertMany(ctx, params); err != nil {
				fail("insert: %v", err)
			}
		}
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE river_job"); err != nil {
			fail("vacuum: %v", err)
		}
		if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
			fail("checkpoint: %v", err)
		}
		start := time.Now()
		if err := client.Start(ctx); err != nil {
			fail("start: %v", err)
		}
		deadline := start.Add(5 * time.Minute)
		for {
			var completed int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&completed); err != nil {
				fail("count: %v", err)
			}
			if completed >= *jobs {
				break
			}
			if time.Now().After(deadline) {
				fail("round %d: %d of %d jobs completed after 5 minutes", round, completed, *jobs)
			}
			time.Sleep(2 * time.Millisecond)
		}
		seconds := time.Since(start).Seconds()
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := client.Stop(stopCtx); err != nil {
			fail("stop: %v", err)
		}
		cancel()
		rates = append(rates, float64(*jobs)/seconds)
		fmt.Printf("round %d: %d jobs worked in %.2f s: %.0f jobs/s\n", round, *jobs, seconds, rates[len(rates)-1])
	}
	sorted := append([]float64(nil), rates...)
	sort.Float64s(sorted)
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	out, _ := json.Marshal(map[string]any{
		"jobs_per_second": median, "rounds": rates, "river": riverVersion(), "jobs": *jobs,
		"workers": *workers, "fetch_cooldown_ms": cooldown.Seconds() * 1000,
	})
	fmt.Println(string(out))
}
