//! Robustness of `zeroclaw acp` against hostile input: more than 10,000 random and mutated
//! lines (bad JSON, wrong types, huge numbers, deep nesting, invalid UTF-8, random bytes, valid
//! requests with mutated fields, a 40 MiB line) fed to ONE server process. Each line must be
//! answered or ignored exactly as the contract says, the process must stay alive and answer a
//! final request, and its peak memory must stay bounded.
//!
//! The generator is a seeded xorshift; the seed is printed and can be replayed with
//! `ZC_ROBUST_SEED=<n> cargo test --test acp -- robustness::`.

use crate::support;

use std::collections::HashMap;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, is_response, memory_kib};
use support::model_server::{ModelServer, text_reply};

const LINES: usize = 10_500;
const MEMORY_LIMIT_KIB: u64 = 200 * 1024;

/// xorshift64*: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What the contract says must happen to one line.
#[derive(Debug)]
enum Expect {
    /// No message at all (blank lines, notifications, responses).
    Ignored,
    /// Exactly one error with `id: null` and one of these codes.
    NullError(&'static [i64]),
    /// Exactly one response carrying this id.
    Answer(Value),
    /// Either one response with this id or one `id: null` error (envelope damage).
    AnswerOrNullError(Value),
}

/// Derives the contract's expectation from the bytes of a line.
fn classify(line: &[u8]) -> Expect {
    let Ok(text) = std::str::from_utf8(line) else {
        return Expect::NullError(&[-32700]);
    };
    if text.trim().is_empty() {
        return Expect::Ignored;
    }
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Expect::NullError(&[-32700]);
    };
    let Value::Object(obj) = value else {
        return Expect::NullError(&[-32600]);
    };
    let id = obj.get("id").cloned();
    let good_id = matches!(&id, Some(Value::String(_))) || id.as_ref().is_some_and(is_int);
    let envelope_ok = obj.get("jsonrpc") == Some(&json!("2.0"));
    let is_response = obj.contains_key("result") || obj.contains_key("error");
    if envelope_ok && is_response && !obj.contains_key("method") {
        // Responses to ids the server never sent (including id null) are ignored.
        return Expect::Ignored;
    }
    if let Some(id) = id.clone().filter(|id| id.is_f64()) {
        // Fractional ids are discouraged by JSON-RPC: echoed or refused, both are fine.
        return Expect::AnswerOrNullError(id);
    }
    match (id, obj.get("method")) {
        (None, Some(Value::String(_))) if envelope_ok => Expect::Ignored,
        (Some(id), Some(Value::String(_))) if good_id && envelope_ok => Expect::Answer(id),
        (Some(id), _) if good_id => Expect::AnswerOrNullError(id),
        _ => Expect::NullError(&[-32600]),
    }
}

fn is_int(v: &Value) -> bool {
    v.as_i64().is_some() || v.as_u64().is_some()
}

/// Builds the hostile lines; `id()` hands out unique request ids.
struct Generator {
    rng: Rng,
    next_id: u64,
    cwd: String,
}

impl Generator {
    fn id(&mut self) -> Value {
        self.next_id += 1;
        if self.rng.chance(50) {
            json!(self.next_id + 1_000_000)
        } else {
            json!(format!("r-{}", self.next_id))
        }
    }

    /// A hostile line and, where the bytes alone do not decide it, what must happen to it.
    fn line(&mut self) -> (Vec<u8>, Option<Expect>) {
        if self.rng.chance(8) {
            return self.deep_params();
        }
        let mut line = match self.rng.below(12) {
            0 => self.random_bytes(),
            1 => self.truncated_json(),
            2 => self.invalid_utf8_in_string(),
            3 => return self.deep_nesting(),
            4 => self.huge_numbers(),
            5 => self.envelope_mutation(),
            6 => self.client_response(),
            7 => self.notification(),
            _ => self.params_mutation(),
        };
        line.retain(|b| *b != b'\n');
        if line.iter().all(u8::is_ascii_whitespace) {
            line = b"{}".to_vec();
        }
        (line, None)
    }

    /// A request whose params nest deeper than a JSON parser's recursion limit: a server may
    /// refuse the line (-32700) or parse the envelope and refuse the params (an answer).
    fn deep_params(&mut self) -> (Vec<u8>, Option<Expect>) {
        let id = self.id();
        let depth = *self.rng.pick(&[129usize, 1_000, 100_000]);
        let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"n":{nested}}}}}"#
        );
        (line.into_bytes(), Some(Expect::AnswerOrNullError(id)))
    }

    fn random_bytes(&mut self) -> Vec<u8> {
        let len = 1 + self.rng.below(200);
        (0..len).map(|_| self.rng.next() as u8).collect()
    }

    fn truncated_json(&mut self) -> Vec<u8> {
        let full = serde_json::to_vec(&self.valid_request()).unwrap();
        let cut = 1 + self.rng.below(full.len() - 1);
        full[..cut].to_vec()
    }

    fn invalid_utf8_in_string(&mut self) -> Vec<u8> {
        let id = self.id();
        let mut line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"initialize\",\"params\":{{\"x\":\""
        )
        .into_bytes();
        let bad: [&[u8]; 3] = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80"];
        let pick: &[u8] = bad[self.rng.below(bad.len())];
        line.extend_from_slice(pick);
        line.extend_from_slice(b"\"}}");
        line
    }

    /// Deep nesting at the top level (never a valid request: a parse error, or an invalid
    /// request for a server that looks at the first byte) or shallow nesting in params.
    fn deep_nesting(&mut self) -> (Vec<u8>, Option<Expect>) {
        let depth = *self.rng.pick(&[40usize, 129, 1_000, 100_000]);
        let (open, close) = if self.rng.chance(50) {
            ("[", "]")
        } else {
            ("{\"a\":", "}")
        };
        let nested = format!("{}1{}", open.repeat(depth), close.repeat(depth));
        if depth > 100 || self.rng.chance(30) {
            return (
                nested.into_bytes(),
                Some(Expect::NullError(&[-32700, -32600])),
            );
        }
        let id = self.id();
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"n":{nested}}}}}"#
        );
        (line.into_bytes(), None)
    }

    fn huge_numbers(&mut self) -> Vec<u8> {
        let number = *self.rng.pick(&[
            "1e400",
            "-1e400",
            "123456789012345678901234567890",
            "18446744073709551616",
            "-9223372036854775809",
            "0.0000000000000000000000000001",
            "1e-400",
        ]);
        let id = self.id();
        // An out-of-range number as the id makes the line unparseable (-32700); in-range
        // fractional ids are left out: JSON-RPC discourages them and float echo is lossy.
        let id_text = if number.contains("e400") && self.rng.chance(50) {
            number.to_string()
        } else {
            id.to_string()
        };
        format!(
            r#"{{"jsonrpc":"2.0","id":{id_text},"method":"session/prompt","params":{{"sessionId":{number},"prompt":"x"}}}}"#
        )
        .into_bytes()
    }

    fn valid_request(&mut self) -> Value {
        let id = self.id();
        let cwd = self.cwd.clone();
        let (method, params) = match self.rng.below(10) {
            0 => (
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            ),
            1 => ("session/new", json!({"cwd": cwd, "mcpServers": []})),
            2 => (
                "session/prompt",
                json!({"sessionId": "s-0000", "prompt": [{"type": "text", "text": "hi"}]}),
            ),
            3 => ("session/cancel", json!({"sessionId": "s-0000"})),
            4 => (
                "session/load",
                json!({"sessionId": "s-0000", "cwd": cwd, "mcpServers": []}),
            ),
            5 => ("session/resume", json!({"sessionId": "s-0000"})),
            6 => ("session/close", json!({"session_id": "s-0000"})),
            7 => ("session/stop", json!({"sessionId": "s-0000"})),
            8 => ("$/cancel_request", json!({"id": 1})),
            _ => ("no/such_method", json!({"a": [1, 2, 3]})),
        };
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn random_value(&mut self) -> Value {
        match self.rng.below(10) {
            0 => Value::Null,
            1 => json!(self.rng.chance(50)),
            2 => json!(self.rng.next() as i64),
            3 => json!(f64::from_bits(self.rng.next() & 0x7FEF_FFFF_FFFF_FFFF)),
            4 => json!("x".repeat(self.rng.below(5_000))),
            5 => json!([1, "two", null, {"three": 3}]),
            6 => json!({"nested": {"deeper": [self.rng.next()]}}),
            7 => json!("../../../../etc/passwd"),
            8 => json!("\u{0000}\u{202e}\u{fffd}"),
            _ => json!(""),
        }
    }

    fn params_mutation(&mut self) -> Vec<u8> {
        let mut req = self.valid_request();
        let params = req["params"].as_object_mut().unwrap();
        let keys: Vec<String> = params.keys().cloned().collect();
        match self.rng.below(4) {
            0 if !keys.is_empty() => {
                params.remove(self.rng.pick(&keys));
            }
            1 if !keys.is_empty() => {
                let key = self.rng.pick(&keys).clone();
                let value = self.random_value();
                req["params"][key] = value;
            }
            2 => req["params"] = self.random_value(),
            _ => {
                let value = self.random_value();
                req["params"]["extra"] = value;
            }
        }
        serde_json::to_vec(&req).unwrap()
    }

    fn envelope_mutation(&mut self) -> Vec<u8> {
        let mut req = self.valid_request();
        let obj = req.as_object_mut().unwrap();
        match self.rng.below(6) {
            0 => {
                obj.remove("jsonrpc");
            }
            1 => {
                obj.insert("jsonrpc".into(), self.random_value());
            }
            2 => {
                obj.insert("method".into(), self.random_value());
            }
            3 => {
                obj.insert(
                    "id".into(),
                    self.rng.pick(&[json!(true), json!({}), json!([1])]).clone(),
                );
            }
            4 => return serde_json::to_vec(&json!([req])).unwrap(),
            _ => {
                let unknown = format!("m/{}", self.rng.next());
                obj.insert("method".into(), json!(unknown));
            }
        }
        serde_json::to_vec(&req).unwrap()
    }

    fn client_response(&mut self) -> Vec<u8> {
        let id = self
            .rng
            .pick(&[json!("zc-out-0"), json!("zc-out-77"), json!(5), Value::Null])
            .clone();
        let body = if self.rng.chance(50) {
            json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "no"}})
        };
        serde_json::to_vec(&body).unwrap()
    }

    fn notification(&mut self) -> Vec<u8> {
        let mut req = self.valid_request();
        req.as_object_mut().unwrap().remove("id");
        serde_json::to_vec(&req).unwrap()
    }
}

fn seed() -> u64 {
    match std::env::var("ZC_ROBUST_SEED") {
        Ok(s) => s.parse().expect("ZC_ROBUST_SEED is a u64"),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            nanos | 1
        }
    }
}

/// Sends one line followed by a ping and checks what the server said about the line.
fn exercise(client: &AcpClient, line: &[u8], expect: &Expect, ping: u64, pending: &mut Vec<Value>) {
    let from = client.message_count();
    let ping_id = json!(format!("ping-{ping}"));
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{ping_id},\"method\":\"initialize\"}}\n").as_bytes(),
    );
    client.send_raw(&bytes);
    let (at, _) = client.wait_for_from(from, |m| is_response(m) && m["id"] == ping_id);
    let window = &client.messages_between(from, at);
    let null_errors: Vec<&Value> = window.iter().filter(|m| is_null_error(m)).collect();
    let shown = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    match expect {
        // An earlier `session/new` answered late is followed by its commands update.
        Expect::Ignored => assert!(
            null_errors.is_empty()
                && window.iter().all(|m| {
                    m.get("id").is_some()
                        || m["params"]["update"]["sessionUpdate"] == "available_commands_update"
                }),
            "line should be ignored: {shown:?}; got {window:?}"
        ),
        Expect::NullError(codes) => {
            assert_eq!(
                null_errors.len(),
                1,
                "one id-null error for {shown:?}; got {window:?}"
            );
            let code = null_errors[0]["error"]["code"].as_i64().unwrap_or_default();
            assert!(
                codes.contains(&code),
                "code {code} for {shown:?}, expected {codes:?}"
            );
        }
        Expect::Answer(id) => {
            assert!(
                null_errors.is_empty(),
                "{shown:?} has an id; got {window:?}"
            );
            pending.push(id.clone());
        }
        Expect::AnswerOrNullError(id) => match null_errors.len() {
            0 => pending.push(id.clone()),
            1 => {}
            _ => panic!("more than one error for {shown:?}: {window:?}"),
        },
    }
}

fn is_null_error(m: &Value) -> bool {
    is_response(m) && m["id"].is_null() && m.get("error").is_some()
}

/// Every id that had to be answered was answered exactly once.
fn check_answers(client: &AcpClient, pending: &[Value]) {
    let count = || {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for m in client.messages().iter().filter(|m| is_response(m)) {
            *seen.entry(m["id"].to_string()).or_default() += 1;
        }
        seen
    };
    let seen = count();
    let missing: Vec<&Value> = pending
        .iter()
        .filter(|id| !seen.contains_key(&id.to_string()))
        .collect();
    for id in missing {
        client.wait_for(|m| is_response(m) && m["id"] == *id);
    }
    let seen = count();
    for id in pending {
        assert_eq!(seen[&id.to_string()], 1, "id {id} answered more than once");
    }
}

#[test]
fn ten_thousand_hostile_lines_leave_the_server_alive_and_bounded() {
    let seed = seed();
    println!("robustness seed: {seed} (replay with ZC_ROBUST_SEED={seed})");
    let work = tempfile::tempdir().unwrap();
    let mut client = AcpClient::builder().spawn();
    client.initialize();
    let mut generator = Generator {
        rng: Rng(seed),
        next_id: 0,
        cwd: work.path().display().to_string(),
    };
    let mut pending = Vec::new();
    for n in 0..LINES {
        let (line, decided) = generator.line();
        let expect = decided.unwrap_or_else(|| classify(&line));
        exercise(&client, &line, &expect, n as u64, &mut pending);
    }
    let huge = forty_mib_line();
    exercise(
        &client,
        &huge,
        &Expect::NullError(&[-32600]),
        u64::MAX,
        &mut pending,
    );
    check_answers(&client, &pending);

    assert!(client.is_alive(), "the server died");
    assert_eq!(client.initialize()["protocolVersion"], 1);
    let (peak, rss) = memory_kib(client.pid()).expect("read /proc status");
    println!("memory after {LINES} lines + 40 MiB line: VmHWM {peak} KiB, VmRSS {rss} KiB");
    assert!(
        peak < MEMORY_LIMIT_KIB,
        "peak RSS {peak} KiB exceeds {MEMORY_LIMIT_KIB} KiB"
    );
    client.assert_valid();
}

#[test]
fn hostile_lines_between_real_turns_do_not_disturb_a_live_session() {
    let base = seed();
    let seed = base.rotate_left(17) | 1;
    println!("live-session robustness seed: {seed} (replay with ZC_ROBUST_SEED={base})");
    let model = ModelServer::start_blocking(vec![]);
    let client = AcpClient::builder().model(model.base_url()).spawn();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    let mut generator = Generator {
        rng: Rng(seed),
        next_id: 0,
        cwd: work.path().display().to_string(),
    };
    let mut pending = Vec::new();
    for n in 0..2_000 {
        if n % 100 == 0 {
            let reply = format!("reply {n}");
            model.push(text_reply(&reply));
            let resp = client.prompt(&session, &format!("prompt {n}"));
            assert_eq!(resp["result"]["content"], reply.as_str(), "{resp}");
        }
        let (line, decided) = generator.line();
        let expect = decided.unwrap_or_else(|| classify(&line));
        exercise(&client, &line, &expect, n, &mut pending);
    }
    check_answers(&client, &pending);
    assert_eq!(
        model.requests().len(),
        20,
        "garbage never reached the model"
    );
    let history = model.requests().last().unwrap().to_string();
    assert!(history.contains("prompt 0") && history.contains("reply 1800"));
}

/// A syntactically valid request padded to 40 MiB: over the default 32 MiB line limit.
fn forty_mib_line() -> Vec<u8> {
    let head = br#"{"jsonrpc":"2.0","id":"huge","method":"initialize","params":{"pad":""#;
    let mut line = head.to_vec();
    line.resize(40 * 1024 * 1024, b'a');
    line.extend_from_slice(b"\"}}");
    line
}
