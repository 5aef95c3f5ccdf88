//! `bench-apiserver`: measures the Kubernetes API emulator under load. It loads N ConfigMaps, measures
//! create/get/list/apply latency percentiles over HTTP, then measures watch fan-out to several watchers
//! (events per second and delivery lag), prints a table and writes the numbers as JSON.
//!
//! This is a benchmark, not a test: it asserts nothing. Run it in release mode for meaningful numbers:
//! `cargo run --release -p e2e --bin bench-apiserver -- --output target/bench-apiserver.json`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use kube_emulator::{ApiServer, ServerConfig};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(name = "bench-apiserver", about = "Benchmark the Kubernetes API emulator")]
struct Args {
    /// How many objects to load.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// How many get/apply/list samples to take.
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// How many concurrent watchers.
    #[arg(long, default_value_t = 4)]
    watchers: usize,
    /// How many changes to stream to the watchers.
    #[arg(long, default_value_t = 2_000)]
    watch_events: usize,
    /// Where to write the JSON results.
    #[arg(long, default_value = "target/bench-apiserver.json")]
    output: PathBuf,
}

/// Latency percentiles of one operation, in milliseconds.
#[derive(Debug, serde::Serialize)]
struct Percentiles {
    operation: String,
    count: usize,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

fn percentiles(operation: &str, mut samples: Vec<Duration>) -> Percentiles {
    samples.sort();
    let at = |q: f64| -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[index].as_secs_f64() * 1000.0
    };
    Percentiles {
        operation: operation.into(),
        count: samples.len(),
        p50_ms: at(0.5),
        p90_ms: at(0.9),
        p99_ms: at(0.99),
        max_ms: samples.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
    }
}

/// Watch fan-out results.
#[derive(Debug, serde::Serialize)]
struct FanOut {
    watchers: usize,
    changes: usize,
    events_received: usize,
    seconds: f64,
    events_per_second: f64,
    lag_p50_ms: f64,
    lag_p99_ms: f64,
    lag_max_ms: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let server = ApiServer::start(ServerConfig {
        history_capacity: args.watch_events.max(10_000) * 2,
        ..ServerConfig::default()
    })
    .await?;
    let base = server.url().to_string();
    let http = server.http_client(kube_emulator::ADMIN_TOKEN);
    let collection = format!("{base}/api/v1/namespaces/default/configmaps");

    let mut creates = Vec::with_capacity(args.objects);
    for i in 0..args.objects {
        let body = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name": format!("cm-{i:05}"),"labels":{"bench":"yes"}},"data":{"index": i.to_string()}});
        let start = Instant::now();
        let resp = http.post(&collection).json(&body).send().await?;
        creates.push(start.elapsed());
        if resp.status().as_u16() != 201 {
            return Err(format!("create failed: {}", resp.text().await?).into());
        }
    }
    let mut gets = Vec::new();
    for i in 0..args.samples {
        let name = format!("cm-{:05}", (i * 7919) % args.objects.max(1));
        let start = Instant::now();
        http.get(format!("{collection}/{name}")).send().await?.bytes().await?;
        gets.push(start.elapsed());
    }
    let mut full_lists = Vec::new();
    let mut paged_lists = Vec::new();
    for _ in 0..(args.samples / 50).max(3) {
        let start = Instant::now();
        http.get(&collection).send().await?.bytes().await?;
        full_lists.push(start.elapsed());
        let start = Instant::now();
        http.get(format!("{collection}?limit=500"))
            .send()
            .await?
            .bytes()
            .await?;
        paged_lists.push(start.elapsed());
    }
    let mut applies = Vec::new();
    for i in 0..args.samples {
        let name = format!("cm-{:05}", i % args.objects.max(1));
        let body =
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name": name},"data":{"applied": i.to_string()}});
        let start = Instant::now();
        http.patch(format!("{collection}/{name}?fieldManager=bench&force=true"))
            .header("content-type", "application/apply-patch+yaml")
            .body(serde_json::to_vec(&body)?)
            .send()
            .await?
            .bytes()
            .await?;
        applies.push(start.elapsed());
    }

    let fan_out = watch_fan_out(&http, &collection, &args).await?;
    let results = vec![
        percentiles("create", creates),
        percentiles("get", gets),
        percentiles(&format!("list (all {})", args.objects), full_lists),
        percentiles("list (limit=500)", paged_lists),
        percentiles("apply", applies),
    ];
    println!(
        "{:<24} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "operation", "count", "p50 ms", "p90 ms", "p99 ms", "max ms"
    );
    for r in &results {
        println!(
            "{:<24} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            r.operation, r.count, r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms
        );
    }
    println!(
        "watch fan-out: {} watchers, {} changes, {} events in {:.2}s = {:.0} events/s; lag p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        fan_out.watchers,
        fan_out.changes,
        fan_out.events_received,
        fan_out.seconds,
        fan_out.events_per_second,
        fan_out.lag_p50_ms,
        fan_out.lag_p99_ms,
        fan_out.lag_max_ms
    );
    let report = json!({"objects": args.objects, "latencies": results, "watch": fan_out});
    if let Some(parent) = args.output.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&args.output, serde_json::to_vec_pretty(&report)?)?;
    println!("wrote {}", args.output.display());
    server.shutdown().await;
    Ok(())
}

async fn watch_fan_out(
    http: &reqwest::Client,
    collection: &str,
    args: &Args,
) -> Result<FanOut, Box<dyn std::error::Error>> {
    let list: Value = http.get(format!("{collection}?limit=1")).send().await?.json().await?;
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap_or("0").to_string();
    let sent_at: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..args.watchers {
        let resp = http
            .get(format!("{collection}?watch=true&resourceVersion={rv}"))
            .send()
            .await?;
        let expected = args.watch_events;
        tasks.push(tokio::spawn(async move {
            let mut stream = resp.bytes_stream();
            let mut buffer = Vec::new();
            let mut received: Vec<(String, Instant)> = Vec::new();
            while received.len() < expected {
                let Ok(Some(Ok(chunk))) = tokio::time::timeout(Duration::from_secs(30), stream.next()).await else {
                    break;
                };
                buffer.extend_from_slice(&chunk);
                while let Some(pos) = buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=pos).collect();
                    let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                        continue;
                    };
                    let rv = event["object"]["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    received.push((rv, Instant::now()));
                }
            }
            received
        }));
    }
    let start = Instant::now();
    for i in 0..args.watch_events {
        let name = format!("cm-{:05}", i % args.objects.max(1));
        let before = Instant::now();
        let resp: Value = http
            .patch(format!("{collection}/{name}"))
            .header("content-type", "application/merge-patch+json")
            .body(serde_json::to_vec(&json!({"data":{"tick": i.to_string()}}))?)
            .send()
            .await?
            .json()
            .await?;
        let rv = resp["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string();
        sent_at.lock().await.insert(rv, before);
    }
    let mut arrivals = Vec::new();
    for task in tasks {
        arrivals.extend(task.await?);
    }
    let seconds = start.elapsed().as_secs_f64();
    let received = arrivals.len();
    let sent_at = sent_at.lock().await;
    let lags: Vec<Duration> = arrivals
        .iter()
        .filter_map(|(rv, at)| sent_at.get(rv).map(|sent| at.saturating_duration_since(*sent)))
        .collect();
    let summary = percentiles("lag", lags);
    Ok(FanOut {
        watchers: args.watchers,
        changes: args.watch_events,
        events_received: received,
        seconds,
        events_per_second: received as f64 / seconds.max(1e-9),
        lag_p50_ms: summary.p50_ms,
        lag_p99_ms: summary.p99_ms,
        lag_max_ms: summary.max_ms,
    })
}
