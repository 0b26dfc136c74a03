//! `locklint server` driven by a scripted client over stdio (issue 11):
//! initialize, open a file with a finding, receive the diagnostic, hover on
//! it, request and apply the code action, see the diagnostic disappear, get
//! an error reply (not a crash) for a malformed message, shut down cleanly.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::Receiver<Value>,
    next_id: i64,
}

fn read_message(r: &mut BufReader<ChildStdout>) -> Option<Value> {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("Content-Length:") {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Client {
    fn start(root: &std::path::Path) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_locklint"))
            .arg("server")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("locklint server starts");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            while let Some(m) = read_message(&mut stdout) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        Client {
            child,
            stdin,
            messages,
            next_id: 0,
        }
    }

    fn send_raw(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        let m = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        self.send_raw(&m.to_string());
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let m = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send_raw(&m.to_string());
        self.wait(|m| m["id"] == json!(id))
    }

    /// The next message matching `pred` (others are skipped); panics after 60 s.
    fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self
                .messages
                .recv_timeout(Duration::from_secs(60))
                .expect("the server answers");
            if pred(&m) {
                return m;
            }
        }
    }

    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let m = self.wait(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        });
        m["params"]["diagnostics"].as_array().unwrap().clone()
    }
}

/// Applies LSP text edits (line/character in UTF-16 units; ASCII here) to `text`.
fn apply(text: &str, edits: &[Value]) -> String {
    let offset = |p: &Value| -> usize {
        let line = p["line"].as_u64().unwrap() as usize;
        let ch = p["character"].as_u64().unwrap() as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        start + ch
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (s, e, t) in spans {
        out.replace_range(s..e, &t);
    }
    out
}

const LOCK_PY: &str = "import redis

r = redis.Redis()


def acquire(name, token):
    if r.setnx(\"lock:\" + name, token):
        r.expire(\"lock:\" + name, 30)
        return token
    return None
";

#[test]
fn scripted_session_fixes_a_finding_and_survives_a_malformed_message() {
    let dir = tempfile::tempdir().unwrap();
    // The workspace's config is read: LL004 is ignored there, LL003 kept.
    std::fs::write(dir.path().join("locklint.toml"), "ignore = [\"LL004\"]\n").unwrap();
    let root = url(dir.path());
    let uri = format!("{root}/lock.py");
    let mut c = Client::start(dir.path());

    let init = c.request(
        "initialize",
        json!({ "processId": null, "rootUri": root, "capabilities": {} }),
    );
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["hoverProvider"], true);
    assert_eq!(caps["codeActionProvider"], true);
    c.notify("initialized", json!({}));

    // A malformed message gets a JSON-RPC parse error, and the session goes on.
    c.send_raw("{this is not json");
    let err = c.wait(|m| m.get("error").is_some());
    assert_eq!(err["error"]["code"], -32700);
    // So does a request for a method locklint does not offer.
    let unknown = c.request("workspace/symbol", json!({ "query": "x" }));
    assert_eq!(unknown["error"]["code"], -32601);

    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "python", "version": 1, "text": LOCK_PY } }),
    );
    let diags = c.diagnostics(&uri);
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(d["code"], "LL003");
    assert_eq!(d["source"], "locklint");
    assert_eq!(d["range"]["start"], json!({ "line": 6, "character": 9 }));

    // Hover on the finding shows the rule's explain text.
    let hover = c.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri }, "position": { "line": 6, "character": 12 } }),
    );
    let shown = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(shown.starts_with("**LL003 setnx-then-expire**"), "{shown}");
    assert!(shown.contains("## What it does"), "{shown}");

    // The code action is the safe fix; applying it removes the finding.
    let actions = c.request(
        "textDocument/codeAction",
        json!({
            "textDocument": { "uri": uri },
            "range": d["range"],
            "context": { "diagnostics": [d] },
        }),
    );
    let action = &actions["result"][0];
    assert_eq!(action["kind"], "quickfix");
    assert_eq!(action["isPreferred"], true);
    let edits = action["edit"]["changes"][&uri].as_array().unwrap();
    let fixed = apply(LOCK_PY, edits);
    assert!(
        fixed.contains("if r.set(\"lock:\" + name, token, nx=True, ex=30):"),
        "{fixed}"
    );
    assert!(!fixed.contains("expire"), "{fixed}");
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": uri, "version": 2 },
            "contentChanges": [{ "text": fixed }],
        }),
    );
    assert_eq!(c.diagnostics(&uri), Vec::<Value>::new());

    // The workspace's locklint.toml ignores LL004: a lock without TTL, which
    // the defaults report, shows nothing here.
    let no_ttl = "import redis\n\nr = redis.Redis()\n\n\ndef take(job, token):\n    return r.setnx(\"lock:\" + job, token)\n";
    let by_default = locklint::check_source(
        "take.py",
        no_ttl,
        locklint::facts::Language::Python,
        &locklint::Settings::default(),
    );
    assert_eq!(
        by_default.iter().map(|f| f.code()).collect::<Vec<_>>(),
        ["LL004"]
    );
    let take = format!("{root}/take.py");
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": take, "languageId": "python", "version": 1, "text": no_ttl } }),
    );
    assert_eq!(c.diagnostics(&take), Vec::<Value>::new());

    // A clean shutdown: the reply, then exit ends the process with status 0.
    let bye = c.request("shutdown", Value::Null);
    assert_eq!(bye["result"], Value::Null);
    assert!(bye.get("error").is_none());
    c.notify("exit", Value::Null);
    let status = c.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// The project link in the editor: an open file is checked against the
/// summaries of the workspace's project, read once, and reports what the
/// CLI reports for it; an unsaved edit of the wrapper's file refreshes that
/// file's own summary.
#[test]
fn open_files_are_linked_against_the_workspace_project_like_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/project/python_wrapper");
    let util = std::fs::read_to_string(fixtures.join("redis_util.py")).unwrap();
    let service = std::fs::read_to_string(fixtures.join("service.py")).unwrap();
    std::fs::write(dir.path().join("redis_util.py"), &util).unwrap();
    std::fs::write(dir.path().join("service.py"), &service).unwrap();

    let want = cli_findings(dir.path(), "service.py");
    let codes: Vec<&str> = want.iter().map(|w| w.0.as_str()).collect();
    assert_eq!(codes, ["LL001", "LL002"]);
    // Alone, the file shows none of them: they come through the wrapper.
    let alone = locklint::check_source(
        "service.py",
        &service,
        locklint::facts::Language::Python,
        &locklint::Settings::default(),
    );
    assert!(alone.is_empty(), "{alone:?}");

    let root = url(dir.path());
    let uri = format!("{root}/service.py");
    let mut c = Client::start(dir.path());
    c.request(
        "initialize",
        json!({ "processId": null, "rootUri": root, "capabilities": {} }),
    );
    c.notify("initialized", json!({}));
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "python", "version": 1, "text": service } }),
    );
    assert_eq!(positions(&c.diagnostics(&uri)), want);

    // The wrapper's release is edited away (unsaved): the caller, checked
    // again, no longer releases through it.
    let util_uri = format!("{root}/redis_util.py");
    let edited = util.replace("        self.r.delete(key)\n", "        return None\n");
    assert_ne!(edited, util);
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": util_uri, "languageId": "python", "version": 1, "text": edited } }),
    );
    assert_eq!(c.diagnostics(&util_uri), Vec::<Value>::new());
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": uri, "version": 2 },
            "contentChanges": [{ "text": service }],
        }),
    );
    let after = positions(&c.diagnostics(&uri));
    assert_ne!(after, want);
    // The CLI on the project as edited agrees.
    let saved = tempfile::tempdir().unwrap();
    std::fs::create_dir(saved.path().join(".git")).unwrap();
    std::fs::write(saved.path().join("redis_util.py"), &edited).unwrap();
    std::fs::write(saved.path().join("service.py"), &service).unwrap();
    assert_eq!(after, cli_findings(saved.path(), "service.py"));

    c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    assert!(c.child.wait().unwrap().success());
}

/// (code, 0-based line, 0-based column) of what `locklint --format json
/// file` reports, run in `dir`, sorted.
fn cli_findings(dir: &std::path::Path, file: &str) -> Vec<(String, u64, u64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_locklint"))
        .args(["--format", "json", file])
        .current_dir(dir)
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut v: Vec<(String, u64, u64)> = cli["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap() - 1,
                f["column"].as_u64().unwrap() - 1,
            )
        })
        .collect();
    v.sort();
    v
}

/// (code, line, character) of published diagnostics, sorted.
fn positions(diags: &[Value]) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> = diags
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["range"]["start"]["line"].as_u64().unwrap(),
                d["range"]["start"]["character"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A `file://` URL for a folder (the temporary folders have no spaces).
fn url(path: &std::path::Path) -> String {
    let p = path.canonicalize().unwrap();
    format!("file://{}", p.display())
}
