use super::*;

fn calls(src: &str) -> Vec<LuaCall> {
    analyse(src).calls
}

/// (command, guarded) of every call.
fn shape(src: &str) -> Vec<(String, bool)> {
    calls(src)
        .into_iter()
        .map(|c| (c.command, c.guarded))
        .collect()
}

fn s(cmd: &str, guarded: bool) -> (String, bool) {
    (cmd.to_string(), guarded)
}

#[test]
fn safe_release() {
    let src = "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1])\nelse\n  return 0\nend";
    let c = calls(src);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].command, "get");
    assert_eq!(c[0].args, vec![LuaArg::Keys(1)]);
    assert!(!c[0].guarded);
    assert_eq!(c[1].command, "del");
    assert_eq!(c[1].args, vec![LuaArg::Keys(1)]);
    assert!(c[1].guarded);
    assert_eq!(
        &src[c[1].span.start()..c[1].span.end()],
        "redis.call('del', KEYS[1])"
    );
    assert!(!analyse(src).partial);
}

#[test]
fn safe_extend() {
    let src = "if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"pexpire\", KEYS[1], ARGV[2]) else return 0 end";
    let c = calls(src);
    assert_eq!(c[1].command, "pexpire");
    assert_eq!(c[1].args, vec![LuaArg::Keys(1), LuaArg::Argv(2)]);
    assert!(c[1].guarded);
}

#[test]
fn unsafe_del() {
    assert_eq!(
        shape("return redis.call('del', KEYS[1])"),
        vec![s("del", false)]
    );
    assert_eq!(
        shape("redis.call('get', KEYS[1])\nreturn redis.call('del', KEYS[1])"),
        vec![s("get", false), s("del", false)]
    );
}

#[test]
fn del_in_else_branch_is_not_guarded() {
    let src = "if redis.call('get', KEYS[1]) == ARGV[1] then return 1 else return redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src), vec![s("get", false), s("del", false)]);
    // elseif after an == check runs when the check failed.
    let src = "if redis.call('get', KEYS[1]) == ARGV[1] then return 1 elseif ARGV[2] == '1' then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
}

#[test]
fn ne_check_then_branch_is_the_failure_path() {
    let src = "if redis.call('get', KEYS[1]) ~= ARGV[1] then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
    let src = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 else return redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn early_return() {
    let src = "if redis.call('get', KEYS[1]) ~= ARGV[1] then\n  return 0\nend\nreturn redis.call('del', KEYS[1])";
    assert_eq!(shape(src), vec![s("get", false), s("del", true)]);
}

#[test]
fn false_or_ne_token_alias() {
    let src = "local key = KEYS[1]\nlocal token = ARGV[1]\nlocal v = redis.call('GET', key)\nif v == false or v ~= token then\n  return 0\nend\nredis.call('DEL', key)\nreturn 1";
    let c = calls(src);
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].command, "del");
    assert_eq!(c[1].args, vec![LuaArg::Keys(1)]);
    assert!(c[1].guarded);
}

#[test]
fn local_read_then_compare() {
    let src = "local v = redis.call('get', KEYS[1]); if v == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn redisson_style_hexists_hincrby() {
    let src = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; \
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; \
else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;";
    let c = calls(src);
    let cmds: Vec<&str> = c.iter().map(|c| c.command.as_str()).collect();
    assert_eq!(
        cmds,
        vec!["hexists", "hincrby", "pexpire", "del", "publish"]
    );
    assert_eq!(
        c[1].args,
        vec![
            LuaArg::Keys(1),
            LuaArg::Argv(3),
            LuaArg::Literal("-1".into())
        ]
    );
    assert!(!c[0].guarded);
    assert!(c[1..].iter().all(|c| c.guarded));
}

#[test]
fn hget_with_argv_field_in_condition() {
    let src = "if redis.call('hget', KEYS[1], ARGV[1]) then return redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn bsm_redislock_mget() {
    let src = "local values = redis.call(\"mget\", unpack(KEYS))\nfor i, _ in ipairs(KEYS) do\n\tif values[i] ~= ARGV[1] then\n\t\treturn false\n\tend\nend\nredis.call(\"del\", unpack(KEYS))\nreturn true";
    let c = calls(src);
    assert_eq!(c[1].command, "del");
    assert_eq!(c[1].args, vec![LuaArg::Other]);
    assert!(c[1].guarded);
    assert!(!analyse(src).partial);
    let src = "local vals = redis.call('mget', KEYS[1]) if vals[1] == ARGV[1] then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn symfony_zscore() {
    let src = "local key = KEYS[1]\nlocal uniqueToken = ARGV[1]\nif redis.call('ZSCORE', key, uniqueToken) then\n  return redis.call('DEL', key)\nend\nreturn 0";
    let c = calls(src);
    assert_eq!(c[0].command, "zscore");
    assert_eq!(c[0].args, vec![LuaArg::Keys(1), LuaArg::Argv(1)]);
    assert!(c[1].guarded);
}

#[test]
fn getrange_with_string_sub() {
    let src = "if string.sub(redis.call('getrange', KEYS[1], 0, 35), 1, 36) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn aliases_and_pcall_and_case() {
    let src = "local rcall = redis.call\nlocal call = redis.pcall\nlocal k = KEYS[2]\nrcall('DEL', k)\ncall(\"Unlink\", KEYS[1], ARGV[1], 'x', 5)";
    let c = calls(src);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].command, "del");
    assert_eq!(c[0].args, vec![LuaArg::Keys(2)]);
    assert_eq!(&src[c[0].span.start()..c[0].span.end()], "rcall('DEL', k)");
    assert_eq!(c[1].command, "unlink");
    assert_eq!(
        c[1].args,
        vec![
            LuaArg::Keys(1),
            LuaArg::Argv(1),
            LuaArg::Literal("x".into()),
            LuaArg::Literal("5".into())
        ]
    );
    // An alias checks too.
    let src = "local rcall = redis.call if rcall('get', KEYS[1]) == ARGV[1] then return rcall('del', KEYS[1]) end";
    assert_eq!(shape(src), vec![s("get", false), s("del", true)]);
}

#[test]
fn non_literal_command_and_index() {
    let c = calls(
        "redis.call(ARGV[4], KEYS[#KEYS], KEYS[i], KEYS[1.5], 'a' .. KEYS[i], KEYS[1] .. ARGV[1])",
    );
    assert_eq!(c[0].command, "?");
    assert!(c[0].args.iter().all(|a| *a == LuaArg::Other));
}

#[test]
fn literal_joined_to_a_key() {
    let affixed = |index: u32, prefix: &str, suffix: &str| {
        LuaArg::KeysAffixed(Box::new(crate::facts::AffixedKey {
            index,
            prefix: prefix.into(),
            suffix: suffix.into(),
        }))
    };
    let src = "local k = KEYS[2]\nredis.call('del', 'lock_' .. KEYS[1], KEYS[1] .. ':lock', 'a:' .. k .. ':b' .. 'c', '' .. KEYS[3])";
    let c = calls(src);
    assert_eq!(
        c[0].args,
        vec![
            affixed(1, "lock_", ""),
            affixed(1, "", ":lock"),
            affixed(2, "a:", ":bc"),
            LuaArg::Keys(3)
        ]
    );
    // the release's check and delete both name `lock_` .. KEYS[1]
    let release = "if (redis.call(\"get\", \"lock_\" .. KEYS[1]) == ARGV[1]) then\n\treturn redis.call(\"del\", \"lock_\" .. KEYS[1])\nelse\n\treturn 0\nend";
    let facts = analyse(release);
    assert_eq!(shape(release), vec![s("get", false), s("del", true)]);
    assert_eq!(first_key_affix(&facts), Some(("lock_", "")));
    // a bare KEYS[1] next to a built one: no single key the script touches
    let mixed = analyse("redis.call('get', 'lock_' .. KEYS[1]) redis.call('del', KEYS[1])");
    assert_eq!(first_key_affix(&mixed), None);
    assert_eq!(
        first_key_affix(&analyse("redis.call('del', KEYS[1])")),
        None
    );
    assert_eq!(
        first_key_affix(&analyse(
            "redis.call('del', KEYS[1] .. ':x', 'p:' .. KEYS[2])"
        )),
        Some(("", ":x"))
    );
}

#[test]
fn literal_compare_is_not_a_check() {
    let src = "if redis.call('get', KEYS[1]) == '1' then return redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
    let src = "if redis.call('exists', KEYS[1]) == 1 then return redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
    // An unrelated ARGV comparison beside a literal compare is not a check either.
    let src = "if redis.call('get', KEYS[1]) == '1' and ARGV[2] == 'force' then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
}

#[test]
fn token_passed_as_another_key_is_a_check() {
    // node/redlock style: the owner's value arrives as KEYS[2].
    let src = "local key = KEYS[1]\nlocal value = KEYS[2]\nif redis.call(\"get\", key) == value then return redis.call(\"del\", key) else return 0 end";
    assert_eq!(shape(src), vec![s("get", false), s("del", true)]);
    let src = "local key = KEYS[1]\nif redis.call('get', key) == KEYS[2] then\n  return redis.call('del', key)\nend\nreturn 0";
    assert_eq!(shape(src), vec![s("get", false), s("del", true)]);
    // Through a read local, on either side, `~=` with an early return.
    let src = "local v = redis.call('get', KEYS[1])\nif KEYS[2] ~= v then return 0 end\nreturn redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", true));
    let src = "return redis.call('get', KEYS[2]) == KEYS[1] and redis.call('del', KEYS[2]) or 0";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn key_compared_with_itself_or_a_read_is_not_a_check() {
    // The key itself is not a token, also through aliases or a read local.
    let src = "if redis.call('get', KEYS[1]) == KEYS[1] then return redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
    let src = "local k = KEYS[1]\nlocal same = KEYS[1]\nif redis.call('get', k) == same then return redis.call('del', k) end";
    assert_eq!(shape(src)[1], s("del", false));
    let src =
        "local v = redis.call('get', KEYS[1])\nif v == KEYS[1] then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
    // Two stored values compared: no caller token.
    let src = "if redis.call('get', KEYS[1]) == redis.call('get', KEYS[2]) then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[2], s("del", false));
    // A read of a key that cannot be told apart (computed index, parameter).
    let src = "for i = 1, #KEYS do if redis.call('get', KEYS[i]) == KEYS[2] then redis.call('del', KEYS[i]) end end";
    assert_eq!(shape(src)[1], s("del", false));
    let src = "local function rel(k) if redis.call('get', k) == KEYS[2] then redis.call('del', k) end end";
    assert_eq!(shape(src)[1], s("del", false));
    // A KEYS entry that is also read (mget of both) is no token either.
    let src = "local v = redis.call('mget', KEYS[1], KEYS[2])\nif v[1] == KEYS[2] then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
    // A literal stays a literal whatever KEYS sit beside it.
    let src = "if redis.call('get', KEYS[1]) == '1' then return redis.call('del', KEYS[2]) end";
    assert_eq!(shape(src)[1], s("del", false));
}

#[test]
fn comments_do_not_produce_calls() {
    let src = "-- redis.call('del', KEYS[1])\n--[[ redis.call('del', KEYS[1]) ]]\n--[==[\nredis.call('del', KEYS[1])\n]==]\nreturn redis.call('get', KEYS[1])";
    assert_eq!(shape(src), vec![s("get", false)]);
    // Nor do strings.
    assert_eq!(shape("return \"redis.call('del', KEYS[1])\""), vec![]);
}

#[test]
fn check_through_a_local_boolean() {
    let src = "local owned = redis.call('get', KEYS[1]) == ARGV[1]\nif not owned then return 0 end\nreturn redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn check_through_a_local_function() {
    let src = "local function owned()\n  return redis.call('get', KEYS[1]) == ARGV[1]\nend\nif not owned() then return 0 end\nreturn redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", true));
    let src = "local owns = function() return redis.call('get', KEYS[1]) == ARGV[1] end\nif owns() then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", true));
    // A function that compares with a literal is no check.
    let src = "local function set() return redis.call('get', KEYS[1]) == '1' end\nif set() then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
}

#[test]
fn loop_over_mget_values() {
    let src = "local vals = redis.call('mget', unpack(KEYS))\nfor _, v in ipairs(vals) do\n  if v ~= ARGV[1] then return 0 end\nend\nreturn redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", true));
}

#[test]
fn and_or_one_liner() {
    let src = "return redis.call('get', KEYS[1]) == ARGV[1] and redis.call('del', KEYS[1]) or 0";
    assert_eq!(shape(src), vec![s("get", false), s("del", true)]);
    // Only the right operand of the `and` is guarded.
    let src = "local r = redis.call('get', KEYS[1]) == ARGV[1] and 1 or redis.call('del', KEYS[1])\nredis.call('del', KEYS[2])";
    assert_eq!(
        shape(src),
        vec![s("get", false), s("del", false), s("del", false)]
    );
    // `~=` and a literal compare guard nothing.
    let src = "return redis.call('get', KEYS[1]) ~= ARGV[1] and redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", false));
    let src = "return redis.call('get', KEYS[1]) == '1' and redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", false));
}

#[test]
fn assert_check() {
    let src = "assert(redis.call('get', KEYS[1]) == ARGV[1], 'not the owner')\nreturn redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", true));
    let src = "assert(redis.call('get', KEYS[1]) ~= false)\nreturn redis.call('del', KEYS[1])";
    assert_eq!(shape(src)[1], s("del", false));
}

#[test]
fn reassigned_alias_is_forgotten() {
    let src = "local token = ARGV[1]\ntoken = 'x'\nif redis.call('get', KEYS[1]) == token then redis.call('del', KEYS[1]) end";
    assert_eq!(shape(src)[1], s("del", false));
}

#[test]
fn nested_blocks_and_loops() {
    let src = "for i = 1, #KEYS do\n  if redis.call('get', KEYS[i]) == ARGV[1] then\n    while true do redis.call('del', KEYS[i]) break end\n  else\n    repeat redis.call('expire', KEYS[1], 1) until true\n  end\nend";
    assert_eq!(
        shape(src),
        vec![s("get", false), s("del", true), s("expire", false)]
    );
    assert!(!analyse(src).partial);
}

#[test]
fn partial_on_broken_scripts() {
    let f = analyse("if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]");
    assert!(f.partial);
    assert_eq!(f.calls.len(), 2);
    assert!(f.calls[1].guarded);
    assert!(analyse("end end )").partial);
}

#[test]
fn never_panics_on_odd_input() {
    for src in [
        "",
        "redis.call(",
        "redis.call",
        "redis . call ( 'del' , KEYS [ 99999999999 ] )",
        "local = = =",
        "local a, b",
        "if then else elseif end until",
        "rcall = redis.call rcall(",
        "'\\",
        "[==[",
        "--[[",
        "\u{0}\u{ff}é\u{10ffff}",
        "if (((( then",
        "local x <const> = KEYS[1] redis.call('del', x)",
    ] {
        let _ = analyse(src);
    }
}

#[test]
fn deep_nesting_stays_linear() {
    let mut src = String::new();
    for _ in 0..3_000 {
        src.push_str("if f(function() local a = g(function() ");
    }
    for _ in 0..3_000 {
        src.push_str("end) then end end)");
    }
    let start = std::time::Instant::now();
    let _ = analyse(&src);
    // Generous even for a debug build on a loaded machine; quadratic would take minutes.
    assert!(start.elapsed().as_secs() < 20);
}

#[test]
fn extract_file_names_the_script_after_the_stem() {
    let f = extract_file(
        Path::new("scripts/unlock.lua"),
        "return redis.call('del', KEYS[1])",
    );
    assert_eq!(f.language, Language::Lua);
    assert_eq!(f.scripts.len(), 1);
    assert_eq!(f.scripts[0].name.as_deref(), Some("unlock"));
    assert_eq!(f.scripts[0].anchors, vec![(0, 0)]);
    assert_eq!(f.scripts[0].client, Client::Lua);
    assert_eq!(f.scripts[0].lua.calls.len(), 1);
}

/// Prints how long 10 MB inputs take; run with
/// `cargo test --release --lib frontend::lua::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_of_10_mb_inputs() {
    let unit = "local key = KEYS[1]\nlocal token = ARGV[1] -- the caller's token\nif redis.call('get', key) == token then\n  redis.call('pexpire', key, ARGV[2])\n  return redis.call('del', key)\nelse\n  return 0\nend\n";
    let inputs: Vec<(&str, String)> = vec![
        ("realistic", unit.repeat(10_000_000 / unit.len())),
        ("if-storm", "if ".repeat(3_400_000)),
        ("open-parens", "(".repeat(10_000_000)),
        ("nested-calls", "redis.call('del', ".repeat(500_000)),
        ("one-string", format!("'{}'", "x".repeat(10_000_000))),
        ("comparisons", "if a == ARGV[1] == b ".repeat(500_000)),
        (
            "and-chains",
            "x = redis.call('get', k) == ARGV[1] and ".repeat(250_000),
        ),
        (
            "locals",
            "local a, b = KEYS[1], redis.call('get', x) ".repeat(250_000),
        ),
        (
            "nested-functions",
            "if f(function() local a = g(function() ".repeat(250_000),
        ),
    ];
    for (name, src) in inputs {
        let start = std::time::Instant::now();
        let toks = lexer::lex(&src).toks.len();
        println!(
            "{name:>18}: lexing {toks} tokens took {:?}",
            start.elapsed()
        );
        let start = std::time::Instant::now();
        let f = analyse(&src);
        println!(
            "{name:>18}: {:>6} KiB, {:>8} calls, {:?}",
            src.len() / 1024,
            f.calls.len(),
            start.elapsed()
        );
    }
}

/// A tiny deterministic generator (xorshift) for robustness tests without
/// extra dependencies.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_token_soup_never_panics() {
    const PIECES: &[&str] = &[
        "redis.call",
        "redis.pcall",
        "rcall",
        "local",
        "rcall = redis.call",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        "'del'",
        "\"GET\"",
        "KEYS[1]",
        "ARGV[1]",
        "KEYS",
        "ARGV",
        "==",
        "~=",
        "if",
        "then",
        "else",
        "elseif",
        "end",
        "not",
        "and",
        "or",
        "function",
        "do",
        "repeat",
        "until",
        "return",
        "=",
        "..",
        "--",
        "--[[",
        "]]",
        "[[",
        "[==[",
        "'",
        "\"",
        "\\",
        "é",
        "\n",
        " ",
        "1",
        "0x",
        "1e",
        "<const>",
        "token",
        "v",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2000 {
        let len = (rng.next() % 60) as usize;
        let mut src = String::new();
        for _ in 0..len {
            src.push_str(PIECES[(rng.next() % PIECES.len() as u64) as usize]);
            if rng.next() % 3 == 0 {
                src.push(' ');
            }
        }
        let f = analyse(&src);
        for c in &f.calls {
            assert!(
                c.span.start() <= c.span.end() && c.span.end() <= src.len(),
                "{src}"
            );
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(42);
    for _ in 0..500 {
        let len = (rng.next() % 200) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| (rng.next() % 256) as u8).collect();
        let src = String::from_utf8_lossy(&bytes);
        let _ = analyse(&src);
    }
}

/// The value of every string literal of `src`, in order.
fn string_values(src: &str) -> Vec<String> {
    let l = lexer::lex(src);
    (0..l.toks.len())
        .filter_map(|i| lexer::str_value(src, &l.toks, &l.decoded, i))
        .map(str::to_string)
        .collect()
}

#[test]
fn strings_with_and_without_escapes_read_the_same() {
    let src = "a = 'SET' b = \"SET\" c = 'S\\69T' d = \"\\x53ET\" e = '\\83\\69\\84' \
               f = [[SET]] g = [==[SET]==] h = [[\nSET]] i = 'S\\\nT' j = \"it's\" k = 'say \"x\"'";
    let v = string_values(src);
    assert_eq!(v[..8], ["SET"; 8]);
    assert_eq!(v[8], "S\nT");
    assert_eq!(v[9], "it's");
    assert_eq!(v[10], "say \"x\"");
    // only the strings with an escape keep a decoded copy
    let l = lexer::lex(src);
    assert_eq!(l.decoded.len(), 4);
    assert!(!l.partial);
    // the same commands either way
    let c = calls(
        "redis.call('D\\x45L', KEYS[1]) redis.call([[del]], KEYS[1]) redis.call(\"del\", KEYS[1])",
    );
    assert!(c.iter().all(|c| c.command == "del"), "{c:?}");
}

#[test]
fn long_bracket_and_unclosed_strings() {
    for (src, want, partial) in [
        ("[[\r\nx]]", "x", false),
        ("[[\n\nx]]", "\nx", false),
        ("[[\r]]", "", false),
        ("[==[a]]b]=]c]==]", "a]]b]=]c", false),
        ("[[]]", "", false),
        ("[=[]=]", "", false),
        ("[==[\n]==]", "", false),
        ("[[é]]", "é", false),
        ("'héllo'", "héllo", false),
        ("''", "", false),
        ("[[abc", "abc", true),
        ("[==[ab]=]", "ab]=]", true),
        ("[=[]", "]", true),
        ("[[\n", "", true),
        ("[[", "", true),
        ("'abc", "abc", true),
        ("'", "", true),
        ("'ab\nc", "ab", true),
        ("'a\\tb\n", "a\tb", true),
        ("\"a\\", "a", true),
    ] {
        let l = lexer::lex(src);
        assert_eq!(l.partial, partial, "{src:?}");
        assert_eq!(string_values(src)[0], want, "{src:?}");
    }
}

#[test]
fn random_strings_have_a_value() {
    const PIECES: &[&str] = &[
        "'", "\"", "\\", "\\n", "\\x4", "\\z", "\\u{48}", "\\9", "[[", "[=[", "]]", "]=]", "=",
        "]", "[", "\n", "\r", " ", "a", "é", "--",
    ];
    let mut rng = Rng(7);
    for _ in 0..3000 {
        let len = (rng.next() % 24) as usize;
        let mut src = String::new();
        for _ in 0..len {
            src.push_str(PIECES[(rng.next() % PIECES.len() as u64) as usize]);
        }
        let l = lexer::lex(&src);
        for (i, t) in l.toks.iter().enumerate() {
            let v = lexer::str_value(&src, &l.toks, &l.decoded, i);
            assert_eq!(v.is_some(), t.kind() == lexer::Kind::Str, "{src:?}");
            // a value without a decoded copy is a part of the token's text
            if let Some(v) = v.filter(|_| l.decoded.iter().all(|d| d.0 as usize != i)) {
                let text = &src[t.start as usize..t.end() as usize];
                assert!(text.contains(v), "{src:?}: {v:?} in {text:?}");
            }
        }
    }
}

#[test]
fn bracket_groups_are_jumped_over() {
    // commas inside nested groups do not split a call's arguments
    let c = calls("redis.call('del', f(a, g(b, c)), {1, {2, 3}}, t[k(1, 2)], KEYS[1])");
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].args,
        vec![LuaArg::Other, LuaArg::Other, LuaArg::Other, LuaArg::Keys(1)]
    );
    // a mismatched closing bracket leaves its group unmatched: the call takes
    // what follows, up to its bound, and the script is partial
    let f = analyse("redis.call('del', (KEYS[1]], ARGV[1])");
    assert_eq!(f.calls.len(), 1);
    assert!(f.partial);
    // a call inside a matched group after an unmatched one is still found
    let f = analyse("x = ( redis.call('get', KEYS[1]) if (a) then redis.call('del', KEYS[1]) end");
    assert_eq!(f.calls.len(), 2);
    assert!(f.partial);
}
