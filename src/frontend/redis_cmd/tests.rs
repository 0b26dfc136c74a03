use super::*;

fn redis(src: &str) -> FileFacts {
    extract(src, Language::Redis)
}

fn sh(src: &str) -> FileFacts {
    extract(src, Language::Shell)
}

fn kinds(f: &FileFacts) -> Vec<OpKind> {
    f.ops.iter().map(|o| o.kind.clone()).collect()
}

fn at(src: &str, span: Span) -> &str {
    &src[span.range()]
}

#[test]
fn set_variants_map_to_op_kinds() {
    let f = redis(
        "SET lock:job 1 NX PX 30000\nset lock:job 1 nx\nSET lock:job 1 XX PX 100\nSET k v PX 100\nSET k v\nSETNX lock:a 1\nSET lock:z 1 NX EX 0\nSET lock:job v IFEQ t PX 10\nSETEX k 10 v\n",
    );
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Acquire { expiry: true },
            OpKind::Acquire { expiry: false },
            OpKind::Expire,
            OpKind::Set { expiry: true },
            OpKind::Set { expiry: false },
            OpKind::Acquire { expiry: false },
            OpKind::Acquire { expiry: false },
            OpKind::CheckedExtend,
            OpKind::Set { expiry: true },
        ]
    );
    assert_eq!(f.ops[0].key, KeyExpr::lit("lock:job"));
    assert_eq!(
        f.ops[0].value().cloned(),
        Some(ValueExpr::Constant("1".into()))
    );
    assert_eq!(f.ops[0].client, Client::RedisCli);
    assert_eq!(f.ops[0].scope, 0);
}

#[test]
fn releases_reads_and_scripts() {
    let src = "# a comment: DEL lock:x\nDEL lock:a lock:b\nUNLINK lock:c\nDELEX lock:d IFEQ tok\nDELIFEQ lock:e tok\nGET lock:f\nMGET a b\nGETDEL t\nGETSET lock:g 1\nEXPIRE lock:h 10\nPEXPIREAT lock:i 99\n";
    let f = redis(src);
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Release { checked: false },
            OpKind::Release { checked: false },
            OpKind::Release { checked: false },
            OpKind::Release { checked: true },
            OpKind::Release { checked: true },
            OpKind::Get,
            OpKind::Get,
            OpKind::Get,
            OpKind::GetDel,
            OpKind::GetSet,
            OpKind::Expire,
            OpKind::Expire,
        ]
    );
    assert_eq!(f.ops[1].key, KeyExpr::lit("lock:b"));
    assert_eq!(at(src, f.ops[0].name_span), "DEL");
    assert_eq!(at(src, f.ops[0].span), "DEL lock:a lock:b");
    assert!(f.ops.windows(2).all(|w| w[0].order < w[1].order));
}

#[test]
fn eval_literal_script_is_anchored() {
    let src = "EVAL \"return redis.call('del', KEYS[1])\" 1 lock:job tok\nEVALSHA abc 2 k1 k2\n";
    let f = redis(src);
    assert_eq!(f.scripts.len(), 1);
    let s = &f.scripts[0];
    assert_eq!(s.text, "return redis.call('del', KEYS[1])");
    let call = &s.lua.calls[0];
    let start = s.to_source(call.span.start());
    assert_eq!(&src[start..start + 10], "redis.call");
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Eval { script: Some(0) },
            OpKind::Eval { script: None },
            OpKind::Eval { script: None },
        ]
    );
    assert_eq!(f.ops[0].key, KeyExpr::lit("lock:job"));
}

#[test]
fn escapes_in_scripts_keep_anchors_right() {
    let src = "EVAL \"local t = \\\"x\\\"\\nreturn redis.call('del', KEYS[1])\" 1 lock:job\n";
    let f = redis(src);
    let s = &f.scripts[0];
    assert_eq!(s.text, "local t = \"x\"\nreturn redis.call('del', KEYS[1])");
    let call = &s.lua.calls[0];
    let start = s.to_source(call.span.start());
    assert_eq!(&src[start..start + 10], "redis.call");
}

#[test]
fn multi_exec_and_watch() {
    let f =
        redis("WATCH lock:a\nGET lock:a\nMULTI\nDEL lock:a\nSETNX lock:b 1\nEXEC\nDEL lock:a\n");
    let flags: Vec<(bool, bool)> = f.ops.iter().map(|o| (o.atomic(), o.watched())).collect();
    assert_eq!(
        flags,
        vec![(false, true), (true, true), (true, false), (false, false)]
    );
}

#[test]
fn redis_sheet_placeholders_and_random_tokens() {
    let f = redis("SET lock:$JOB <token> NX PX 100\nSET lock:a 3f2a9c0e-1b7d-4e8a-9f00-0c1d2e3f4a5b NX PX 1\n");
    assert_eq!(
        f.ops[0].key.parts,
        vec![KeyPart::Lit("lock:".into()), KeyPart::Var("JOB".into())]
    );
    assert_eq!(f.ops[0].value().cloned(), Some(ValueExpr::Unknown));
    assert_eq!(f.ops[1].value().cloned(), Some(ValueExpr::Unique));
}

#[test]
fn shell_redis_cli_lines() {
    let src = "#!/bin/sh\n# redis-cli DEL lock:job\nredis-cli -h \"$HOST\" -p 6379 -n 0 --raw SET \"lock:$JOB\" \"$(uuidgen)\" NX EX 30\necho \"DEL lock:job\"\nredis-cli DEL lock:$JOB 2>/dev/null\n";
    let f = sh(src);
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Acquire { expiry: true },
            OpKind::Release { checked: false }
        ]
    );
    assert_eq!(
        f.ops[0].key.parts,
        vec![KeyPart::Lit("lock:".into()), KeyPart::Var("JOB".into())]
    );
    assert_eq!(f.ops[0].key.idents, vec!["JOB".to_string()]);
    assert_eq!(f.ops[0].value().cloned(), Some(ValueExpr::Unique));
    assert_eq!(at(src, f.ops[0].name_span), "SET");
    assert_eq!(f.ops[1].key, f.ops[0].key);
}

#[test]
fn shell_cli_through_variables_substitutions_and_chains() {
    let src = "REDIS=\"redis-cli -h localhost\"\nR2=redis-cli\nTOKEN=$(cat /proc/sys/kernel/random/uuid)\nif [ \"$($REDIS SET lock:a \"$TOKEN\" NX PX 100)\" = OK ]; then\n  ${R2} GET lock:a && `redis-cli DEL lock:a`\nfi\nOK=$(redis-cli --raw SETNX lock:b $$)\n";
    let f = sh(src);
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Acquire { expiry: true },
            OpKind::Get,
            OpKind::Release { checked: false },
            OpKind::Acquire { expiry: false },
        ]
    );
    assert_eq!(f.ops[0].value().cloned(), Some(ValueExpr::Unique));
    assert_eq!(f.ops[0].depth(), 1);
    assert_eq!(
        f.ops[3].value().cloned(),
        Some(ValueExpr::Weak("a process id".into()))
    );
}

#[test]
fn shell_values() {
    let f = sh("redis-cli SET lock:a 1 NX\nredis-cli SET lock:b $(hostname) NX\nredis-cli SET lock:c \"$(date +%s)\" NX\nredis-cli SET lock:d $(openssl rand -hex 16) NX\nV=locked\nredis-cli SET lock:e $V NX\nredis-cli SET lock:f \"$(hostname)-$$\" NX\nredis-cli SET lock:g \"$1\" NX\n");
    let values: Vec<ValueExpr> = f.ops.iter().filter_map(|o| o.value().cloned()).collect();
    assert_eq!(
        values,
        vec![
            ValueExpr::Constant("1".into()),
            ValueExpr::Weak("a host name".into()),
            ValueExpr::Weak("the current time".into()),
            ValueExpr::Unique,
            ValueExpr::Constant("locked".into()),
            ValueExpr::Unknown,
            ValueExpr::Unknown,
        ]
    );
}

#[test]
fn shell_functions_are_scopes() {
    let src = "acquire_lock() {\n  redis-cli SET lock:job \"$TOKEN\" NX PX 100\n}\n\nfunction release_lock {\n  redis-cli DEL lock:job\n}\nredis-cli GET lock:job\n";
    let f = sh(src);
    let scopes: Vec<(&str, u32)> = f
        .ops
        .iter()
        .map(|o| (f.scopes[o.scope as usize].name.as_str(), o.scope))
        .collect();
    assert_eq!(
        scopes,
        vec![("acquire_lock", 1), ("release_lock", 2), ("", 0)]
    );
}

#[test]
fn heredoc_is_one_session() {
    let src = "redis-cli -n 2 <<EOF\nMULTI\nSETNX lock:job $(uuidgen)\nEXPIRE lock:job 30\nEXEC\nEOF\nredis-cli <<'RAW'\nSET lock:x $TOKEN NX\nRAW\nredis-cli MULTI\nredis-cli DEL lock:job\n";
    let f = sh(src);
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Acquire { expiry: false },
            OpKind::Expire,
            OpKind::Acquire { expiry: false },
            OpKind::Release { checked: false },
        ]
    );
    assert!(f.ops[0].atomic() && f.ops[1].atomic());
    assert_eq!(f.ops[0].value().cloned(), Some(ValueExpr::Unique));
    // A `$NAME` in a raw command reads as a placeholder, not a constant.
    assert_eq!(f.ops[2].value().cloned(), Some(ValueExpr::Unknown));
    // Separate invocations are separate connections: no transaction.
    assert!(!f.ops[3].atomic());
    assert_eq!(at(src, f.ops[1].name_span), "EXPIRE");
}

#[test]
fn shell_eval_with_inline_script_and_eval_file() {
    let src = "redis-cli EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end\" 1 \"lock:$JOB\" \"$TOKEN\"\nredis-cli --eval release.lua lock:a lock:b , tok\n";
    let f = sh(src);
    assert_eq!(f.scripts.len(), 1);
    let s = &f.scripts[0];
    assert!(s.lua.calls[1].guarded);
    let start = s.to_source(s.lua.calls[1].span.start());
    assert_eq!(&src[start..start + 16], "redis.call('del'");
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Eval { script: Some(0) },
            OpKind::Eval { script: None },
            OpKind::Eval { script: None },
        ]
    );
}

#[test]
fn trap_and_sh_c_bodies_are_read() {
    let src = "redis-cli SET lock:deploy \"$(uuidgen)\" NX EX 600 || exit 1\ntrap 'redis-cli DEL lock:deploy' EXIT\nsh -c \"redis-cli DEL lock:other\"\nbash -c 'redis-cli UNLINK lock:x; echo ok'\n";
    let f = sh(src);
    assert_eq!(
        kinds(&f),
        vec![
            OpKind::Acquire { expiry: true },
            OpKind::Release { checked: false },
            OpKind::Release { checked: false },
            OpKind::Release { checked: false },
        ]
    );
    assert_eq!(at(src, f.ops[1].name_span), "DEL");
    assert_eq!(f.ops[1].key, KeyExpr::lit("lock:deploy"));
    assert_eq!(at(src, f.ops[2].name_span), "DEL");
    assert_eq!(at(src, f.ops[3].span), "UNLINK lock:x");
}

#[test]
fn line_continuations_and_comments() {
    let src =
        "redis-cli \\\n  -h host \\\n  SET lock:job 1 \\\n  NX PX 100 # trailing DEL lock:job\n";
    let f = sh(src);
    assert_eq!(kinds(&f), vec![OpKind::Acquire { expiry: true }]);
    assert_eq!(at(src, f.ops[0].span), "SET lock:job 1 \\\n  NX PX 100");
}

#[test]
fn never_panics() {
    for src in [
        "",
        "SET",
        "SET k",
        "EVAL",
        "EVAL \"",
        "EVAL 'x' 99999999999999999999 k",
        "DEL \"\\x",
        "DEL \"\\xé\"",
        "\"\\",
        "'",
        "$",
        "${",
        "$(",
        "SET $(( k",
        "é\\é\"é'é$é",
    ] {
        let _ = redis(src);
        let _ = sh(src);
        let _ = sh(&format!("redis-cli {src}"));
        let _ = sh(&format!("redis-cli <<E\n{src}\nE"));
        let _ = sh(&format!("f() {{ redis-cli {src}"));
    }
}

#[test]
fn random_shell_soup_never_panics() {
    const PIECES: &[&str] = &[
        "redis-cli",
        "$REDIS",
        "REDIS=redis-cli",
        "SET",
        "DEL",
        "lock:$JOB",
        "NX",
        "PX",
        "100",
        "EVAL",
        "\"return redis.call('del', KEYS[1])\"",
        "1",
        "MULTI",
        "EXEC",
        "WATCH",
        "<<EOF",
        "<<-'E'",
        "EOF",
        "E",
        "\n",
        "\t",
        ";",
        "&&",
        "||",
        "|",
        "&",
        "(",
        ")",
        "{",
        "}",
        "f()",
        "function",
        "if",
        "then",
        "fi",
        "$(",
        "`",
        "'",
        "\"",
        "\\",
        "${",
        "$((",
        "#",
        "$$",
        "2>",
        ">",
        "é",
        " ",
        "-h",
        "--eval",
        ",",
        "case",
        "esac",
        "$'",
    ];
    let mut rng = crate::frontend::lua::tests::Rng(7);
    for _ in 0..1500 {
        let len = (rng.next() % 50) as usize;
        let mut src = String::new();
        for _ in 0..len {
            src.push_str(PIECES[(rng.next() % PIECES.len() as u64) as usize]);
            if rng.next() % 2 == 0 {
                src.push(' ');
            }
        }
        for lang in [Language::Shell, Language::Redis] {
            let f = extract(&src, lang);
            for o in &f.ops {
                assert!(
                    o.span.end() <= src.len() && o.name_span.end() <= src.len(),
                    "{src:?}"
                );
                assert!((o.scope as usize) < f.scopes.len());
            }
            for s in &f.scripts {
                for c in &s.lua.calls {
                    assert!(s.to_source(c.span.end()) <= src.len(), "{src:?}");
                }
            }
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = crate::frontend::lua::tests::Rng(1234);
    for _ in 0..500 {
        let len = (rng.next() % 300) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| (rng.next() % 256) as u8).collect();
        let src = String::from_utf8_lossy(&bytes);
        let _ = extract(&src, Language::Shell);
        let _ = extract(&src, Language::Redis);
    }
}

/// Prints how long 10 MB inputs take; run with
/// `cargo test --release --lib frontend::redis_cmd::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_of_10_mb_inputs() {
    let shell_unit = "release_lock() {\n  # give the lock back\n  redis-cli -h \"$HOST\" EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end\" 1 \"lock:$JOB\" \"$TOKEN\"\n  OK=$(redis-cli SET \"lock:$JOB\" \"$(uuidgen)\" NX PX 3000) && echo done\n}\n";
    let redis_unit = "SET lock:job $TOKEN NX PX 30000\nGET lock:job\nDELEX lock:job IFEQ $TOKEN\n";
    let inputs: Vec<(&str, Language, String)> = vec![
        (
            "shell",
            Language::Shell,
            shell_unit.repeat(10_000_000 / shell_unit.len()),
        ),
        (
            "redis",
            Language::Redis,
            redis_unit.repeat(10_000_000 / redis_unit.len()),
        ),
        ("substs", Language::Shell, "$(".repeat(5_000_000)),
        ("braces", Language::Shell, "${".repeat(5_000_000)),
        (
            "heredocs",
            Language::Shell,
            "redis-cli <<A\nDEL lock:x\nA\n".repeat(400_000),
        ),
        ("one-line", Language::Redis, "DEL ".repeat(2_500_000)),
    ];
    for (name, lang, src) in inputs {
        let start = std::time::Instant::now();
        let f = extract(&src, lang);
        println!(
            "{name:>10}: {:>6} KiB, {:>8} ops, {:?}",
            src.len() / 1024,
            f.ops.len(),
            start.elapsed()
        );
    }
}

/// The facts of a script read whole (every token lexed first).
fn sh_whole(src: &str) -> FileFacts {
    let mut x = Extractor::new(src, Language::Shell);
    x.list(&shell::lex(src), 0);
    x.facts
        .absence_guards
        .sort_by_key(|g| (g.write.start(), g.check.start()));
    x.facts
}

#[test]
fn batched_lexing_reads_like_the_whole_script() {
    // a function definition whose `{` stands after line breaks, a command
    // continued over a line end and a here-document, each placed across
    // the lexer's batch boundary in turn (padding shifts them by one token)
    let tail = "take_lock() \n\n\n\n\n\n\n\n\n\n\n{\n  redis-cli SET lock:a \"$1\" NX PX 100\n}\n\
                redis-cli -h host \\\n  DEL lock:a\n\
                redis-cli <<EOF\nSET lock:b 1 NX\nDEL lock:b\nEOF\n\
                if [ \"$(redis-cli EXISTS lock:c)\" = 0 ]; then redis-cli SET lock:c 1; fi\n";
    let mut seen = 0;
    // two tokens a padding line: the tail's ~70 tokens start from just
    // before to past the first boundary (4,096 tokens)
    for pad in 2000..2050 {
        let mut src = String::from("#!/bin/sh\n");
        for _ in 0..pad {
            src.push_str("x\n");
        }
        src.push_str(tail);
        let batched = sh(&src);
        assert_eq!(batched, sh_whole(&src), "pad {pad}");
        assert!(batched.scopes.iter().any(|s| s.name == "take_lock"));
        seen += batched.ops.len();
    }
    assert!(seen > 0);
}

#[test]
fn stream_hands_out_the_tokens_of_lex() {
    let src = "f() {\n redis-cli SET k 1 NX; echo $(redis-cli GET k)\n}\n\n\nf\ncat <<X\nbody\nX\nredis-cli DEL k\n";
    let mut st = shell::stream(src);
    let mut got = Vec::new();
    while !st.done() {
        let n = got.len() + 1;
        st.fill(&mut got, n);
    }
    assert_eq!(got, shell::lex(src));
}
