//! Runs the scripts locklint recommends against a real `redis-server`, and
//! reproduces the defects its rules describe, so the advice is proven rather
//! than asserted.
//!
//! Each test starts its own server on a free loopback port (no persistence,
//! killed on drop) and talks to it with a tiny RESP client over `TcpStream`.
//! A missing `redis-server` fails the test: it never passes silently.

use locklint::advice::{EXTEND_SCRIPT, RELEASE_SCRIPT};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// A redis-server of our own.

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_server_binary() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("redis-server"))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => p,
        None => panic!(
            "redis-server is not on PATH; these tests need a real server: \
             install redis-server: apt-get install -y redis-server"
        ),
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

impl Server {
    fn start() -> Server {
        let binary = redis_server_binary();
        let mut last_error = String::new();
        // A port found free can be taken before the server binds it: retry a few times.
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&binary)
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--save", ""])
                .args(["--appendonly", "no"])
                .args(["--daemonize", "no"])
                .args(["--protected-mode", "yes"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
            let mut server = Server { child, port };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(status)) = server.child.try_wait() {
                    last_error = format!("redis-server on port {port} exited with {status}");
                    break;
                }
                // Ours, not another process's on the same port: INFO names our pid.
                let pid = format!("process_id:{}\r\n", server.child.id());
                let ready = Client::connect(port)
                    .and_then(|mut c| c.try_cmd(&["INFO", "server"]))
                    .is_ok_and(|r| match r {
                        Reply::Bulk(Some(info)) => String::from_utf8_lossy(&info).contains(&pid),
                        _ => false,
                    });
                if ready {
                    return server;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if last_error.is_empty() {
                last_error = format!("redis-server on port {port} did not answer PING within 10 s");
            }
            drop(server);
        }
        panic!("{last_error}");
    }

    fn client(&self) -> Client {
        Client::connect(self.port).expect("connect to redis-server")
    }
}

// ---------------------------------------------------------------------------
// A minimal RESP2 client.

#[derive(Clone, Debug, PartialEq, Eq)]
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    fn ok() -> Reply {
        Reply::Simple("OK".into())
    }
    fn bulk(s: &str) -> Reply {
        Reply::Bulk(Some(s.as_bytes().to_vec()))
    }
    fn nil() -> Reply {
        Reply::Bulk(None)
    }
    fn int(&self) -> i64 {
        match self {
            Reply::Int(n) => *n,
            other => panic!("expected an integer reply, got {other:?}"),
        }
    }
}

struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn connect(port: u16) -> std::io::Result<Client> {
        let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        Ok(Client {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    fn cmd(&mut self, args: &[&str]) -> Reply {
        self.try_cmd(args)
            .unwrap_or_else(|e| panic!("redis command {args:?} failed: {e}"))
    }

    fn try_cmd(&mut self, args: &[&str]) -> std::io::Result<Reply> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&out)?;
        self.read_reply()
    }

    fn read_line(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        match line.strip_suffix("\r\n") {
            Some(l) if !l.is_empty() => Ok(l.to_string()),
            _ => Err(bad(format!("truncated reply line {line:?}"))),
        }
    }

    fn read_reply(&mut self) -> std::io::Result<Reply> {
        let line = self.read_line()?;
        let (kind, rest) = line.split_at(1);
        let number = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| bad(format!("bad number in {line:?}")))
        };
        Ok(match kind {
            "+" => Reply::Simple(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Int(number(rest)?),
            "$" => {
                let n = number(rest)?;
                if n < 0 {
                    return Ok(Reply::Bulk(None));
                }
                let mut buf = vec![0u8; n as usize + 2];
                self.reader.read_exact(&mut buf)?;
                buf.truncate(n as usize);
                Reply::Bulk(Some(buf))
            }
            "*" => {
                let n = number(rest)?;
                if n < 0 {
                    return Ok(Reply::Array(None));
                }
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(self.read_reply()?);
                }
                Reply::Array(Some(items))
            }
            _ => return Err(bad(format!("unexpected reply {line:?}"))),
        })
    }

    fn get(&mut self, key: &str) -> Reply {
        self.cmd(&["GET", key])
    }

    fn pttl(&mut self, key: &str) -> i64 {
        self.cmd(&["PTTL", key]).int()
    }
}

fn bad(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// Polls until `key` no longer exists; panics after `limit`.
fn wait_until_gone(c: &mut Client, key: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        if c.cmd(&["EXISTS", key]).int() == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "key {key} still exists after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------
// The scenarios.

/// LL002: a plain DEL after the lease expired deletes the next holder's lock;
/// the recommended release script refuses.
#[test]
fn plain_del_frees_another_holders_lock_but_the_release_script_does_not() {
    let server = Server::start();
    let mut a = server.client();
    let mut b = server.client();
    let mut c = server.client();

    // The defect.
    let key = "lock:seed:plain";
    assert_eq!(a.cmd(&["SET", key, "a", "NX", "PX", "200"]), Reply::ok());
    wait_until_gone(&mut a, key, Duration::from_secs(5));
    assert_eq!(b.cmd(&["SET", key, "b", "NX", "PX", "30000"]), Reply::ok());
    // A, slower than its TTL, "releases" the lock it no longer holds.
    assert_eq!(a.cmd(&["DEL", key]).int(), 1, "A's DEL deleted B's lock");
    assert_eq!(
        c.cmd(&["SET", key, "c", "NX", "PX", "30000"]),
        Reply::ok(),
        "C got in while B still believes it holds the lock"
    );
    assert_eq!(c.get(key), Reply::bulk("c"));

    // The fix: the release script with A's token.
    let key = "lock:seed:script";
    assert_eq!(a.cmd(&["SET", key, "a", "NX", "PX", "200"]), Reply::ok());
    wait_until_gone(&mut a, key, Duration::from_secs(5));
    assert_eq!(b.cmd(&["SET", key, "b", "NX", "PX", "30000"]), Reply::ok());
    assert_eq!(
        a.cmd(&["EVAL", RELEASE_SCRIPT, "1", key, "a"]).int(),
        0,
        "the release script must not delete a lock A no longer holds"
    );
    assert_eq!(b.get(key), Reply::bulk("b"), "B keeps its lock");
    assert_eq!(
        c.cmd(&["SET", key, "c", "NX", "PX", "30000"]),
        Reply::nil(),
        "C must not get in"
    );
    // And the owner can release with it.
    assert_eq!(b.cmd(&["EVAL", RELEASE_SCRIPT, "1", key, "b"]).int(), 1);
    assert_eq!(b.get(key), Reply::nil());
}

/// LL007: the recommended extend script extends only the owner's lease.
#[test]
fn extend_script_only_extends_the_owners_lease() {
    let server = Server::start();
    let mut c = server.client();
    let key = "lock:extend";
    assert_eq!(
        c.cmd(&["SET", key, "owner", "NX", "PX", "10000"]),
        Reply::ok()
    );
    let before = c.pttl(key);
    assert!(before > 0 && before <= 10_000, "PTTL {before}");

    assert_eq!(
        c.cmd(&["EVAL", EXTEND_SCRIPT, "1", key, "intruder", "60000"])
            .int(),
        0,
        "a wrong token must not extend"
    );
    let after_wrong = c.pttl(key);
    assert!(
        after_wrong > 0 && after_wrong <= before,
        "PTTL must not grow on a wrong token: {before} -> {after_wrong}"
    );
    assert_eq!(c.get(key), Reply::bulk("owner"));

    assert_eq!(
        c.cmd(&["EVAL", EXTEND_SCRIPT, "1", key, "owner", "60000"])
            .int(),
        1,
        "the owner's token extends"
    );
    let after_right = c.pttl(key);
    assert!(
        after_right > 30_000 && after_right <= 60_000,
        "PTTL must be raised to about 60 s: {after_right}"
    );
    assert_eq!(c.get(key), Reply::bulk("owner"));
}

/// LL003 inside MULTI/EXEC: the EXPIRE runs even when the SETNX failed, so
/// every waiter's attempt refreshes a crashed holder's lock.
#[test]
fn transactional_setnx_expire_waiters_keep_a_crashed_holders_lock_alive() {
    let server = Server::start();
    let mut a = server.client();
    let mut b = server.client();
    let key = "lock:multi";

    let attempt = |c: &mut Client, token: &str| -> Reply {
        assert_eq!(c.cmd(&["MULTI"]), Reply::ok());
        assert_eq!(
            c.cmd(&["SETNX", key, token]),
            Reply::Simple("QUEUED".into())
        );
        assert_eq!(c.cmd(&["EXPIRE", key, "1"]), Reply::Simple("QUEUED".into()));
        c.cmd(&["EXEC"])
    };

    // A takes the lock, then "crashes": it never releases.
    assert_eq!(
        attempt(&mut a, "a"),
        Reply::Array(Some(vec![Reply::Int(1), Reply::Int(1)]))
    );
    let start = Instant::now();

    // B waits for it, retrying every ~300 ms for ~2.5 s, well past the 1 s TTL.
    let mut tries = 0;
    while start.elapsed() < Duration::from_millis(2500) && tries < 20 {
        let reply = attempt(&mut b, "b");
        assert_eq!(
            reply,
            Reply::Array(Some(vec![Reply::Int(0), Reply::Int(1)])),
            "B's SETNX fails but its EXPIRE refreshes A's lock"
        );
        tries += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(start.elapsed() >= Duration::from_millis(2500));
    assert_eq!(
        b.get(key),
        Reply::bulk("a"),
        "A's lock outlived its 1 s TTL because every waiter refreshed it"
    );

    // Once the waiter stops, the TTL runs out as it should have long ago.
    wait_until_gone(&mut b, key, Duration::from_secs(5));
}

/// The helper itself: a server that is gone shows up as a connect error, not a hang.
#[test]
fn server_is_stopped_on_drop() {
    let server = Server::start();
    let port = server.port;
    assert_eq!(server.client().cmd(&["PING"]), Reply::Simple("PONG".into()));
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Client::connect(port).is_ok() {
        assert!(Instant::now() < deadline, "redis-server still listening");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// --- fix (issue 11): the fixed Python fixtures behave against a real server ---

/// Whether redis-py can be imported; in CI (or with LOCKLINT_REQUIRE_TOOLS)
/// its absence fails the test instead of skipping it.
fn redis_py_ready() -> bool {
    let has = Command::new("python3")
        .args(["-c", "import redis"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        let required = ["CI", "LOCKLINT_REQUIRE_TOOLS"]
            .iter()
            .any(|v| std::env::var(v).is_ok_and(|s| s == "true" || s == "1"));
        assert!(
            !required,
            "redis-py is missing: .ci/run installs it with pip"
        );
        eprintln!("skipped: redis-py is not installed (pip install redis)");
    }
    has
}

/// A Python fixture after `locklint --fix` (with `level`), written as
/// `module.py` in `dir`.
fn fixed_python(
    file: &str,
    level: locklint::fix::Level,
    dir: &std::path::Path,
    module: &str,
) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/python")
        .join(file);
    let src = std::fs::read_to_string(path).unwrap();
    let settings = locklint::Settings::default();
    let language = locklint::facts::Language::Python;
    let fixed = locklint::fix::fix_source(file, &src, language, &settings, level);
    assert!(fixed.changed(), "{file}: no fix at {level:?}");
    std::fs::write(dir.join(format!("{module}.py")), &fixed.fixed).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("__pycache__"));
    fixed.fixed
}

/// Runs `body` with `dir` on Python's path; returns its stdout, trimmed.
fn run_python(dir: &std::path::Path, body: &str) -> String {
    let script = format!(
        "import sys, redis\nsys.path.insert(0, {:?})\n{body}",
        dir.display().to_string()
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `locklint --fix` on the Python LL003 fixtures, then the fixed functions
/// run with redis-py against our server: the lock is taken once, carries
/// the TTL the separate EXPIRE used to set, and a second caller is refused.
#[test]
fn fixed_python_ll003_fixtures_take_the_lock_with_its_ttl() {
    if !redis_py_ready() {
        return;
    }
    let server = Server::start();
    // (fixture, function call, key, TTL the EXPIRE set)
    let cases = [
        (
            "ll003_bad_setnx_expire.py",
            "acquire('job')",
            "lock:job",
            30,
        ),
        (
            "ll003_bad_throttle_setnx_expire_constant.py",
            "throttle('job')",
            "lock:job",
            10,
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (file, call, key, ttl)) in cases.into_iter().enumerate() {
        let module = format!("fixed{i}");
        let text = fixed_python(file, locklint::fix::Level::Safe, dir.path(), &module);
        assert!(text.contains("nx=True, ex="), "{file}");
        server.client().cmd(&["FLUSHALL"]);
        let stdout = run_python(
            dir.path(),
            &format!(
                "import {module} as fixed\nfixed.r = redis.Redis(port={port})\n\
                 first = fixed.{call}\nsecond = fixed.{call}\n\
                 print(bool(first), bool(second), fixed.r.ttl({key:?}))\n",
                port = server.port,
            ),
        );
        let parts: Vec<&str> = stdout.split_whitespace().collect();
        assert_eq!(&parts[..2], ["True", "False"], "{file}: {stdout}");
        let left: i64 = parts[2].parse().unwrap();
        assert!(
            left > 0 && left <= ttl,
            "{file}: TTL {left}, expected 1..={ttl}"
        );
    }
}

/// The unsafe LL002 fix of the Python lock class: after it, a second holder
/// (another token) cannot release the lock; the holder can.
#[test]
fn fixed_python_ll002_release_only_frees_the_holders_lock() {
    if !redis_py_ready() {
        return;
    }
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let file = "ll002_bad_unlink_method.py";
    fixed_python(
        file,
        locklint::fix::Level::Unsafe,
        dir.path(),
        "fixed_mutex",
    );
    let stdout = run_python(
        dir.path(),
        &format!(
            "from fixed_mutex import RedisMutex\nc = redis.Redis(port={port})\n\
             a = RedisMutex(c, 'lock:report'); b = RedisMutex(c, 'lock:report')\n\
             first = a.lock(); second = b.lock()\n\
             b.token = 'another-holder'; b.unlock()\n\
             after_other = c.exists('lock:report')\n\
             a.unlock()\n\
             print(bool(first), bool(second), after_other, c.exists('lock:report'))\n",
            port = server.port,
        ),
    );
    assert_eq!(stdout, "True False 1 0", "{file}");
}
/// The unsafe LL005 fix: the delete after the client-side comparison is
/// the checked release, so a GET that saw our token before the lease
/// expired and another holder took the key no longer frees their lock.
#[test]
fn fixed_python_ll005_release_survives_a_stale_read() {
    if !redis_py_ready() {
        return;
    }
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let file = "ll005_bad_get_then_delete.py";
    let text = fixed_python(
        file,
        locklint::fix::Level::Unsafe,
        dir.path(),
        "fixed_release",
    );
    assert!(
        text.contains("r.eval(LOCK_RELEASE_SCRIPT, 1, key, token)"),
        "{text}"
    );
    let stdout = run_python(
        dir.path(),
        &format!(
            "import fixed_release as fixed\nc = redis.Redis(port={port})\nfixed.r = c\n\
             c.set('lock:job', 'A'); fixed.release('job', 'A'); gone = c.exists('lock:job')\n\
             c.set('lock:job', 'B')\n\
             c.get = lambda k: b'A'  # the read ran before A's lease expired\n\
             fixed.release('job', 'A')\n\
             print(gone, c.execute_command('GET', 'lock:job').decode())\n",
            port = server.port,
        ),
    );
    assert_eq!(stdout, "0 B", "{file}");
}
/// The unsafe LL007 fix of a lease type: after it, a holder whose lease
/// was taken over cannot extend the new holder's lease; the holder can.
#[test]
fn fixed_python_ll007_refresh_extends_only_the_holders_lease() {
    if !redis_py_ready() {
        return;
    }
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let file = "ll007_bad_refresh_token_in_scope.py";
    let text = fixed_python(
        file,
        locklint::fix::Level::Unsafe,
        dir.path(),
        "fixed_lease",
    );
    assert!(
        text.contains("LOCK_EXTEND_SCRIPT, 1, self.key, self.token, 30000"),
        "{text}"
    );
    let stdout = run_python(
        dir.path(),
        &format!(
            "from fixed_lease import Lease\nc = redis.Redis(port={port})\n\
             a = Lease(c, 'job'); b = Lease(c, 'job')\n\
             took = a.acquire(); c.pexpire('lease:job', 1000)\n\
             b.refresh(); by_other = c.pttl('lease:job')\n\
             a.refresh(); by_holder = c.pttl('lease:job')\n\
             print(took, by_other <= 1000, by_holder > 1000)\n",
            port = server.port,
        ),
    );
    assert_eq!(stdout, "True True True", "{file}");
}
/// The unsafe LL001 fix: the lock is taken with a fresh token, so a
/// holder whose lease expired mid-work releases nothing of the next one.
#[test]
fn fixed_python_ll001_fresh_token_keeps_the_next_holders_lock() {
    if !redis_py_ready() {
        return;
    }
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let file = "ll001_bad_constant_value.py";
    let text = fixed_python(
        file,
        locklint::fix::Level::Unsafe,
        dir.path(),
        "fixed_report",
    );
    assert!(text.contains("token = secrets.token_hex(16)"), "{text}");
    let stdout = run_python(
        dir.path(),
        &format!(
            "import fixed_report as fixed\nc = redis.Redis(port={port})\nfixed.r = c\n\
             seen = []\n\
             def build():\n\
             \x20   seen.append((c.get(fixed.LOCK_KEY) != b'1', c.ttl(fixed.LOCK_KEY) > 0))\n\
             \x20   c.delete(fixed.LOCK_KEY)  # the lease expired mid-work\n\
             \x20   c.set(fixed.LOCK_KEY, 'next-holder', nx=True, ex=300)\n\
             fixed.build = build\n\
             fixed.run_report()\n\
             print(seen, c.get(fixed.LOCK_KEY).decode())\n",
            port = server.port,
        ),
    );
    assert_eq!(stdout, "[(True, True)] next-holder", "{file}");
}
// --- end fix ---
