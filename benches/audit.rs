//! What auditing adds to one tool call (run: `cargo bench --bench audit`): a call writes a
//! `policy.decision` and a `tool.exec` record, each appended by the writer thread and awaited
//! until committed (WAL, `synchronous = NORMAL`, as shipped). Measured here against the same
//! path with nothing to write, in the same run, on a fresh file: the median and p99 of the
//! pair of appends, and the throughput of 200 tasks appending at once. Then the cost of
//! signing one checkpoint (the Ed25519 signed note of a tree head) against computing the chain
//! hash of one record, both in this process. Nothing asserted.

use std::time::{Duration, Instant};

use serde_json::json;
use zeroclaw::audit::checkpoint::{Checkpoint, Signer};
use zeroclaw::audit::{chain, merkle, writer::Writer};

const CALLS: usize = 2000;
const CONCURRENT: usize = 200;
const PER_TASK: usize = 20;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let writer = Writer::spawn(dir.path().join("audit.db"), Ok(None));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        writer.probe().await.expect("audit file opens");
        let mut audited = Vec::with_capacity(CALLS);
        let mut bare = Vec::with_capacity(CALLS);
        for i in 0..CALLS {
            let start = Instant::now();
            writer.append(decision(i)).await.expect("append");
            writer.append(execution(i)).await.expect("append");
            audited.push(start.elapsed());
            // The same two round trips to the writer thread with no record.
            let start = Instant::now();
            writer.probe().await.unwrap();
            writer.probe().await.unwrap();
            bare.push(start.elapsed());
        }
        report("two records per call (as shipped)", &mut audited);
        report("two round trips without a record", &mut bare);

        let start = Instant::now();
        let mut tasks = Vec::new();
        for t in 0..CONCURRENT {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..PER_TASK {
                    writer
                        .append(execution(t * PER_TASK + i))
                        .await
                        .expect("append");
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let took = start.elapsed();
        let records = CONCURRENT * PER_TASK;
        println!(
            "{CONCURRENT} concurrent sessions: {records} records in {:.1} ms = {:.0} records/s",
            took.as_secs_f64() * 1e3,
            records as f64 / took.as_secs_f64()
        );
    });
    checkpoint_cost();
}

/// Signing a checkpoint, against the chain hash of one `tool.exec` record (the baseline),
/// and one leaf added to the tree.
fn checkpoint_cost() {
    const ROUNDS: usize = 5000;
    let signer = Signer::generate("bench.example/audit").expect("a key");
    let mut body = execution(0);
    body["seq"] = 1.into();
    body["alg"] = "sha256".into();
    let canonical = chain::canonical(&body);
    let mut baseline = Vec::with_capacity(ROUNDS);
    let mut signing = Vec::with_capacity(ROUNDS);
    let mut leaves = Vec::with_capacity(ROUNDS);
    let mut tree = merkle::Frontier::default();
    for i in 0..ROUNDS {
        let start = Instant::now();
        std::hint::black_box(chain::link_hash(chain::GENESIS, &body, None));
        baseline.push(start.elapsed());
        let start = Instant::now();
        tree.push(merkle::leaf_hash(canonical.as_bytes()));
        leaves.push(start.elapsed());
        let checkpoint = Checkpoint {
            origin: "bench.example/audit".into(),
            size: i as u64 + 1,
            root: tree.root(),
        };
        let start = Instant::now();
        std::hint::black_box(checkpoint.sign(&signer));
        signing.push(start.elapsed());
    }
    let median = |samples: &mut Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    let (base, sign, leaf) = (
        median(&mut baseline),
        median(&mut signing),
        median(&mut leaves),
    );
    println!(
        "chain hash of one record (baseline): median {:.2} us; one leaf added to the tree: \
         {:.2} us; signing one checkpoint: {:.2} us = {:.1}x the baseline",
        base.as_secs_f64() * 1e6,
        leaf.as_secs_f64() * 1e6,
        sign.as_secs_f64() * 1e6,
        sign.as_secs_f64() / base.as_secs_f64()
    );
}

fn decision(i: usize) -> serde_json::Value {
    json!({"kind": "policy.decision", "time_ms": 1, "session": "s-0123456789abcdef",
           "tool_call_id": format!("call-{i}"), "agent": "coder", "tool": "shell",
           "decision": "allow", "rule": "not_mutating"})
}

fn execution(i: usize) -> serde_json::Value {
    json!({"kind": "tool.exec", "time_ms": 1, "session": "s-0123456789abcdef",
           "tool_call_id": format!("call-{i}"), "agent": "coder", "tool": "shell",
           "command": "cargo test --locked", "args_sha256": "ab".repeat(32),
           "cwd": "/home/me/project", "autonomy": "supervised", "status": "completed",
           "duration_us": 1234, "turn": 3,
           "sandbox": {"backend": "namespaces", "end": "exited", "exit": {"code": 0},
                       "output_bytes": 120, "output_capped": false, "duration_us": 1000,
                       "profile_sha256": "cd".repeat(32),
                       "enforcement": {"backend": "namespaces", "landlock": "full",
                                       "landlock_abi": 6, "seccomp": true,
                                       "namespaces": ["user", "mount", "pid", "net"]}}})
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "{what}: median {:.3} ms, p99 {:.3} ms",
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3
    );
}
