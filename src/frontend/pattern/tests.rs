use super::lexer::{lex_leak as lex, Kind, StrPart};
use super::*;
use crate::facts::{KeyPart, Language};

fn strs(src: &str, lang: Language) -> Vec<String> {
    lex(src, lang)
        .into_iter()
        .filter(|t| t.kind() == Kind::Str)
        .map(|t| t.text().to_string())
        .collect()
}

#[test]
fn comments_are_dropped() {
    let t = lex("a // DEL x\n/* del */ b # c", Language::Java);
    let ids: Vec<_> = t.iter().map(|t| t.text()).collect();
    assert_eq!(ids, vec!["a", "b", "#", "c"]);
    let t = lex("a # del\nb // x", Language::Php);
    assert_eq!(
        t.iter().map(|t| t.text()).collect::<Vec<_>>(),
        vec!["a", "b"]
    );
    let t = lex("a # del\nb", Language::Python);
    assert_eq!(t.len(), 2);
}

/// `LOCKLINT_DUMP=path cargo test --lib pattern::tests::dump -- --nocapture`
#[test]
fn dump() {
    let Ok(p) = std::env::var("LOCKLINT_DUMP") else {
        return;
    };
    let src = std::fs::read_to_string(&p).unwrap();
    let lang = Language::from_path(std::path::Path::new(&p)).unwrap();
    let f = extract(std::path::Path::new(&p), &src, lang);
    let idx = crate::finding::LineIndex::new(&src);
    for (i, s) in f.scopes.iter().enumerate() {
        eprintln!("scope {i}: {s:?}");
    }
    for o in &f.ops {
        let (l, c) = idx.line_col(o.name_span.start());
        eprintln!(
            "{l}:{c} {:?} key={} val={:?} scope={} depth={} atomic={} watched={} {:?}",
            o.kind,
            o.key.display(),
            o.value(),
            o.scope,
            o.depth(),
            o.atomic(),
            o.watched(),
            o.client
        );
    }
    for s in &f.scripts {
        eprintln!(
            "script {:?} anchors={:?} text={:?}",
            s.name, s.anchors, s.text
        );
    }
    for fo in &f.fail_opens {
        let (l, c) = idx.line_col(fo.span.start());
        eprintln!("failopen {l}:{c} key={}", fo.key.display());
    }
    for sp in &f.failure_spans {
        let (a, _) = idx.line_col(sp.start());
        let (b, _) = idx.line_col(sp.end());
        eprintln!("failure span {a}..{b}");
    }
    for sp in &f.validity_spans {
        let (a, _) = idx.line_col(sp.start());
        let (b, _) = idx.line_col(sp.end());
        eprintln!("validity span {a}..{b}");
    }
    for cs in &f.link.calls {
        let (l, _) = idx.line_col(cs.name_span.start());
        eprintln!("call {l} {} scope={}", cs.callee, cs.scope);
    }
    for x in crate::check_source(&p, &src, lang, &Default::default()) {
        eprintln!("FINDING {}@{}:{}", x.code(), x.line, x.column);
    }
}

fn parts(src: &str, lang: Language) -> Vec<Vec<StrPart>> {
    let lexed = super::lexer::lex(src, lang);
    lexed
        .toks()
        .iter()
        .filter_map(|t| t.lit().map(|l| l.parts().collect()))
        .collect()
}

#[test]
fn string_forms() {
    assert_eq!(
        strs("x = \"\"\"\n  a \"b\"\n  \"\"\";", Language::Java),
        vec!["  a \"b\"\n  "]
    );
    assert_eq!(
        strs("val s = \"\"\"raw $x\"\"\"", Language::Kotlin),
        vec!["raw "]
    );
    assert_eq!(strs("`a${b}c`", Language::JavaScript), vec!["ac"]);
    assert_eq!(
        strs("f'lock:{id}' rb'x' '''t'''", Language::Python),
        vec!["lock:", "x", "t"]
    );
    assert_eq!(strs("`a\\nb`", Language::Go), vec!["a\\nb"]);
    assert_eq!(
        strs("@\"a\"\"b\" $\"k:{id}\"", Language::CSharp),
        vec!["a\"b", "k:"]
    );
    assert_eq!(
        strs("\"lock:#{id}\" 'x'", Language::Ruby),
        vec!["lock:", "x"]
    );
    assert_eq!(
        strs("\"k:{$id}\" 'a\\'b' \"p:$x\"", Language::Php),
        vec!["k:", "a'b", "p:"]
    );
    let here = "x = <<~EOS\n  if redis.call('get', KEYS[1])\n  EOS\ny = 1";
    let s = strs(here, Language::Ruby);
    assert_eq!(s, vec!["  if redis.call('get', KEYS[1])\n"]);
    let php = "$s = <<<'LUA'\nredis.call('del', KEYS[1])\nLUA;\n$t = 1;";
    assert_eq!(
        strs(php, Language::Php),
        vec!["redis.call('del', KEYS[1])\n"]
    );
    let p = parts("`lock:${id}`", Language::TypeScript);
    assert!(matches!(&p[0][1], StrPart::Interp(_, _)));
    let p = parts("\"lock:$id\"", Language::Kotlin);
    assert_eq!(p[0].len(), 2);
    assert_eq!(p[0][0], StrPart::Lit(0, 5));
}

/// Token texts are slices of the source; a string literal's text is its
/// decoded text in the literal table, the same with or without escapes.
#[test]
fn token_texts_borrow_the_source() {
    let src = "r.set('lock:a', \"a\\tb\", `k${id}`, '', \"x\\n\")";
    let lexed = super::lexer::lex(src, Language::JavaScript);
    let toks = lexed.toks();
    let in_src = |s: &str| src.as_bytes().as_ptr_range().contains(&s.as_ptr());
    let strs: Vec<&str> = toks
        .iter()
        .filter(|t| t.kind() == Kind::Str)
        .map(|t| t.text())
        .collect();
    assert_eq!(strs, vec!["lock:a", "a\tb", "k", "", "x\n"]);
    assert_eq!(toks.at(4).text(), "lock:a");
    assert_eq!((toks.at(4).start(), toks.at(4).end()), (6, 14));
    // a literal's text is the side table's (not a copy), every other
    // token's a slice of the source
    let in_lits = |s: &str| {
        lexed
            .lits()
            .any(|l| std::ptr::eq(l.text().as_ptr(), s.as_ptr()))
    };
    // a literal that is one run of the source borrows it; one with an
    // escape or an interpolation owns its decoded text
    assert!(in_src(toks.at(4).text()));
    assert!(!in_src(strs[1]) && !in_src(strs[4]));
    assert_eq!(
        toks.at(4).lit().map(|l| l.anchors().collect::<Vec<_>>()),
        Some(vec![(0, 7)])
    );
    assert_eq!(
        toks.at(4).lit().map(|l| l.parts().collect::<Vec<_>>()),
        Some(vec![StrPart::Lit(0, 6)])
    );
    assert!(toks
        .iter()
        .filter(|t| t.kind() == Kind::Str && !t.text().is_empty())
        .all(|t| in_lits(t.text())));
    assert!(toks
        .iter()
        .filter(|t| t.kind() != Kind::Str)
        .all(|t| in_src(t.text()) && t.text() == &src[t.start()..t.end()]));
    assert!(toks.at(0).is_ident() && !toks.at(0).nl());
    // the token itself is small: no allocation, a pointer to its text and
    // one word of packed offsets, kind and flags
    assert_eq!(std::mem::size_of::<super::lexer::Tok>(), 16);
}

/// A token is packed in 5 bytes: a span of 255 bytes or more, a regex and
/// a bad span read their length from a side table, a literal finds its
/// entry by its start. Each reads back as the token it was.
#[test]
fn long_tokens_regexes_and_literals_read_back() {
    let long = "x".repeat(300);
    let num = "9".repeat(255);
    let mut src = format!("a.{long}(b, {num}); c = /[a-z]{{3}}/g.test(d);\n");
    // literals far apart and close together, past many blocks of the
    // literal index
    for i in 0..200 {
        src.push_str(&format!(
            "f('k{i}', \"v\", '', 'w{i}');{}\n",
            " ".repeat(i % 7 * 40)
        ));
    }
    let toks = lex(&src, Language::JavaScript);
    let t = toks.at(2);
    assert_eq!(
        (t.text(), t.kind(), t.start(), t.end()),
        (long.as_str(), Kind::Ident, 2, 302)
    );
    assert!(t.is(&long) && t.is_ident() && !t.is("x"));
    let n = toks.iter().find(|t| t.kind() == Kind::Num).unwrap();
    assert_eq!((n.text(), n.end() - n.start()), (num.as_str(), 255));
    assert!(n.is(&num) && !n.is_ident());
    let re = toks.iter().find(|t| t.text() == "/regex/").unwrap();
    assert_eq!(re.kind(), Kind::Punct);
    assert_eq!(&src[re.start()..re.end()], "/[a-z]{3}/g");
    assert!(re.is("/regex/") && !re.is("/"));
    // every literal is its own, in order, with its own span
    let lits: Vec<(String, usize, usize)> = toks
        .iter()
        .filter(|t| t.kind() == Kind::Str)
        .map(|t| (t.text().to_string(), t.start(), t.end()))
        .collect();
    assert_eq!(lits.len(), 800);
    for (i, w) in lits.chunks(4).enumerate() {
        assert_eq!(w[0].0, format!("k{i}"));
        assert_eq!((w[1].0.as_str(), w[2].0.as_str()), ("v", ""));
        assert_eq!(w[3].0, format!("w{i}"));
        for (text, start, end) in w {
            let quoted = &src[*start..*end];
            assert_eq!(&quoted[1..quoted.len() - 1], text.as_str());
        }
    }
    // a Ruby heredoc's literal is its body, its span the opener's
    let src = "r.eval(<<~LUA, keys: [k])\n  return redis.call('del', KEYS[1])\nLUA\nx = 'y'\n";
    let toks = lex(src, Language::Ruby);
    let h = toks.iter().find(|t| t.kind() == Kind::Str).unwrap();
    assert!(h.text().contains("redis.call('del', KEYS[1])"));
    assert_eq!(&src[h.start()..h.end()], "<<~LUA");
    assert_eq!(toks.last().map(|t| t.text()), Some("y"));
    // a line break is kept on a long token as on any other
    let src = format!("a\n{long}");
    let toks = lex(&src, Language::Go);
    assert!(toks.at(1).nl() && toks.at(1).text() == long);
    assert_eq!(std::mem::size_of::<super::lexer::Packed>(), 5);
}

#[test]
fn anchors_map_escapes() {
    let src = "x = \"a\\nredis.call('del')\"";
    let lexed = super::lexer::lex(src, Language::Java);
    let lit = lexed.toks().iter().find_map(|t| t.lit()).unwrap();
    let off = lit.text().find("redis").unwrap();
    let f = crate::facts::ScriptFact {
        name: None,
        text: lit.text().to_string(),
        anchors: lit.anchors().collect(),
        lua: Default::default(),
        client: Default::default(),
    };
    assert_eq!(&src[f.to_source(off)..f.to_source(off) + 5], "redis");
}

#[test]
fn calls_split_over_lines_and_chains() {
    let src = "class A { void f() {\n  redisTemplate\n    .opsForValue()\n    .setIfAbsent(\"lock:\" + id,\n      token, 10, TimeUnit.SECONDS);\n} }";
    let toks = lex(src, Language::Java);
    let st = calls::structure(toks, src, Language::Java);
    let mut table = calls::CallTable::default();
    let cs = calls::calls(toks, &st, Language::Java, &mut table);
    let c = cs.iter().find(|c| c.name(toks) == "setIfAbsent").unwrap();
    assert_eq!(c.recv(), vec!["redisTemplate", "opsForValue()"]);
    assert_eq!(c.args().len(), 4);
    assert_eq!(st.scopes.name(1), "f");
    assert_eq!(st.scopes.get(1).and_then(|s| s.owner), Some("A"));
}

fn key_of(src: &str, lang: Language) -> Vec<KeyPart> {
    let f = extract(std::path::Path::new("x"), src, lang);
    f.ops
        .first()
        .map(|o| o.key.parts.to_vec())
        .unwrap_or_default()
}

#[test]
fn keys_normalise_across_languages() {
    let want = vec![KeyPart::Lit("lock:".into()), KeyPart::Var("id".into())];
    assert_eq!(
        key_of(
            "class A { void f(String id) { jedis.del(\"lock:\" + id); } }",
            Language::Java
        ),
        want
    );
    assert_eq!(
        key_of(
            "class A { void f(String id) { jedis.del(String.format(\"lock:%s\", id)); } }",
            Language::Java
        ),
        want
    );
    assert_eq!(
        key_of(
            "import redis\ndef f(id):\n    r.delete(f\"lock:{id}\")\n",
            Language::Python
        ),
        want
    );
    assert_eq!(
        key_of(
            "import Redis from 'ioredis'\nasync function f(id) { await redis.del(`lock:${id}`) }",
            Language::JavaScript
        ),
        want
    );
    assert_eq!(key_of("package x\nimport \"github.com/redis/go-redis/v9\"\nfunc f(id string) { rdb.Del(ctx, fmt.Sprintf(\"lock:%s\", id)) }", Language::Go), want);
    assert_eq!(
        key_of(
            "require 'redis'\ndef f(id)\n  redis.del(\"lock:#{id}\")\nend\n",
            Language::Ruby
        ),
        want
    );
    assert_eq!(
        key_of(
            "<?php\nfunction f($id) { $redis->del(\"lock:{$id}\"); }",
            Language::Php
        ),
        want
    );
    assert_eq!(key_of("using StackExchange.Redis;\nclass A { void F(string id) { db.KeyDelete($\"lock:{id}\"); } }", Language::CSharp), want);
    // constants resolve to their literal
    let k = key_of("class A { static final String LOCK_PREFIX = \"lock:\"; void f(String id) { jedis.del(LOCK_PREFIX + id); } }", Language::Java);
    assert_eq!(k, want);
    // fields normalise to one form
    let k = key_of(
        "import redis\nclass L:\n    def release(self):\n        self.r.delete(self.lock_key)\n",
        Language::Python,
    );
    assert_eq!(k, vec![KeyPart::Const("this.lock_key".into())]);
}

#[test]
fn ambiguous_names_need_redis() {
    let f = extract(std::path::Path::new("x.py"), "import os\ndef f(p):\n    os.remove(p)\n    requests.delete(url)\n    session.delete(obj)\n", Language::Python);
    assert!(f.ops.is_empty());
    let f = extract(std::path::Path::new("x.js"), "import axios from 'axios'\nconst redis = new Redis()\nasync function f(k) { await axios.delete(url); map.delete(k); }", Language::JavaScript);
    assert!(f.ops.is_empty());
}

#[test]
fn never_panics_on_odd_input() {
    for lang in [
        Language::Java,
        Language::Kotlin,
        Language::Python,
        Language::JavaScript,
        Language::Go,
        Language::Ruby,
        Language::Php,
        Language::CSharp,
    ] {
        for src in [
            "\"unterminated",
            "'''",
            "`${",
            "<<~EOS\n",
            "<<<EOS",
            "#{",
            "é\"ü\u{1F600}",
            "f(((",
            "}}}",
            "$\"{",
            "@\"",
            "/* ",
            "a.b.c(",
            "%q{",
            "=begin",
        ] {
            let _ = extract(std::path::Path::new("x"), src, lang);
        }
    }
}

/// Every fixture, cut at many points and with brackets/quotes dropped, must
/// lex and extract without a panic.
#[test]
fn truncated_and_mangled_fixtures_never_panic() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut n = 0;
    for dir in [
        "java",
        "kotlin",
        "python",
        "javascript",
        "typescript",
        "go",
        "ruby",
        "php",
        "csharp",
    ] {
        let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Some(lang) = Language::from_path(&p) else {
                continue;
            };
            let src = std::fs::read_to_string(&p).unwrap_or_default();
            let cuts: Vec<usize> = src.char_indices().map(|(i, _)| i).step_by(13).collect();
            for c in cuts {
                let _ = extract(&p, &src[..c], lang);
            }
            for drop in ['(', ')', '{', '}', '"', '\'', '`', '[', ']', '\n'] {
                let mangled: String = src.chars().filter(|&ch| ch != drop).collect();
                let _ = extract(&p, &mangled, lang);
            }
            n += 1;
        }
    }
    assert!(n > 100, "fixtures found: {n}");
}

fn kinds(src: &str, lang: Language) -> Vec<String> {
    extract(std::path::Path::new("x"), src, lang)
        .ops
        .iter()
        .map(|o| format!("{:?}", o.kind))
        .collect()
}

#[test]
fn builder_chains_and_named_options() {
    let j = "import redis.clients.jedis.*;\nclass A { void f() { jedis.set(\"lock:a\", t, SetParams.setParams().nx().px(ms)); } }";
    assert_eq!(kinds(j, Language::Java), vec!["Acquire { expiry: true }"]);
    let l = "import io.lettuce.core.*;\nclass A { void f() { commands.set(\"lock:a\", t, SetArgs.Builder.nx()); } }";
    assert_eq!(kinds(l, Language::Java), vec!["Acquire { expiry: false }"]);
    let c = "import org.springframework.data.redis.connection.*;\nclass A { void f() { conn.set(k.getBytes(), v, Expiration.seconds(10), SetOption.SET_IF_ABSENT); } }";
    assert_eq!(kinds(c, Language::Java), vec!["Acquire { expiry: true }"]);
    let r = "package x\nimport \"github.com/redis/rueidis\"\nfunc f() { client.Do(ctx, client.B().Set().Key(k).Value(v).Nx().Px(ttl).Build()) }";
    assert_eq!(kinds(r, Language::Go), vec!["Acquire { expiry: true }"]);
    let g = "package x\nimport \"github.com/redis/go-redis/v9\"\nfunc f() { rdb.SetArgs(ctx, k, v, redis.SetArgs{Mode: \"NX\", TTL: ttl}) }";
    assert_eq!(kinds(g, Language::Go), vec!["Acquire { expiry: true }"]);
    let p = "import redis\ndef f():\n    r.set(k, v, nx=True, ex=None)\n    r.set(k, v, nx=False, ex=5)\n";
    assert_eq!(
        kinds(p, Language::Python),
        vec!["Acquire { expiry: false }", "Set { expiry: true }"]
    );
    let js = "const redis = require('redis')\nasync function f() { await client.set(k, v, { NX: true, PX: ms }); await client.set(k, v, { condition: 'NX', expiration: { type: 'PX', value: ms } }) }";
    assert_eq!(
        kinds(js, Language::JavaScript),
        vec!["Acquire { expiry: true }", "Acquire { expiry: true }"]
    );
    let php = "<?php\nfunction f($redis) { $redis->set($k, $v, ['nx', 'px' => $ms]); $redis->set($k, $v, 'PX', $ms, 'NX'); }";
    assert_eq!(
        kinds(php, Language::Php),
        vec!["Acquire { expiry: true }", "Acquire { expiry: true }"]
    );
    let rb = "require 'redis'\ndef f\n  redis.set(k, v, nx: true, px: ms)\n  redis.set k, v, nx: true\nend\n";
    assert_eq!(
        kinds(rb, Language::Ruby),
        vec!["Acquire { expiry: true }", "Acquire { expiry: false }"]
    );
    let cs = "using StackExchange.Redis;\nclass A { void F() { db.StringSet(k, v, TimeSpan.FromSeconds(5), When.NotExists); db.StringSet(k, v, null, When.NotExists); } }";
    assert_eq!(
        kinds(cs, Language::CSharp),
        vec!["Acquire { expiry: true }", "Acquire { expiry: false }"]
    );
    let redigo = "package x\nimport \"github.com/gomodule/redigo/redis\"\nfunc f() { conn.Do(\"SET\", k, v, \"NX\", \"PX\", 0) }";
    assert_eq!(
        kinds(redigo, Language::Go),
        vec!["Acquire { expiry: false }"]
    );
}

#[test]
fn scopes_owners_and_tests() {
    let go = "package x\nimport \"github.com/redis/go-redis/v9\"\nfunc (l *RedisLock) Unlock() { l.rdb.Del(ctx, l.key) }\nfunc TestX(t *testing.T) { rdb.Del(ctx, \"lock:a\") }";
    let f = extract(std::path::Path::new("x.go"), go, Language::Go);
    assert_eq!(f.scopes[1].name, "Unlock");
    assert_eq!(f.scopes[1].owner.as_deref(), Some("RedisLock"));
    assert!(f.scopes[2].is_test);
    let j = "class A {\n @Test\n void releases() { jedis.del(\"lock:a\"); }\n}";
    let f = extract(std::path::Path::new("A.java"), j, Language::Java);
    assert!(f.scopes[1].is_test);
    let js = "const redis = require('ioredis')\nmodule.exports = {\n  async release(k) { await redis.del(k) },\n}";
    let f = extract(std::path::Path::new("a.js"), js, Language::JavaScript);
    assert_eq!(f.scopes[1].name, "release");
}

#[test]
fn helpers_returning_one_expression_resolve() {
    let want = vec![KeyPart::Lit("lock:".into()), KeyPart::Var("orderId".into())];
    let j = "import redis.clients.jedis.*;\nclass A {\n private String lockKey(String id) { return \"lock:\" + id; }\n void f(String orderId) { jedis.del(lockKey(orderId)); }\n}";
    assert_eq!(key_of(j, Language::Java), want);
    let p = "import redis\nclass A:\n    def lock_key(self, id):\n        return f\"lock:{id}\"\n\n    def f(self, orderId):\n        r.delete(self.lock_key(orderId))\n";
    assert_eq!(key_of(p, Language::Python), want);
    let g = "package x\nimport \"github.com/redis/go-redis/v9\"\nfunc lockKey(id string) string { return \"lock:\" + id }\nfunc f(orderId string) { rdb.Del(ctx, lockKey(orderId)) }";
    assert_eq!(key_of(g, Language::Go), want);
    let r = "require 'redis'\ndef lock_key(id)\n  \"lock:#{id}\"\nend\ndef f(orderId)\n  redis.del(lock_key(orderId))\nend\n";
    assert_eq!(key_of(r, Language::Ruby), want);
}

#[test]
fn helpers_with_a_return_type_resolve_from_their_body() {
    // `: string {` is a return type, not a body: the helper's expression is
    // the one its braces return (before, the `:` was taken for a Python
    // body, and the expression read on past the function)
    let want = vec![KeyPart::Lit("lock:".into()), KeyPart::Var("orderId".into())];
    let p = "<?php\nclass A {\n  private function lockKey(string $id): string { return 'lock:' . $id; }\n  function f($orderId) { $this->redis->del($this->lockKey($orderId)); }\n}";
    assert_eq!(key_of(p, Language::Php), want);
    let t = "import Redis from 'ioredis';\nfunction lockKey(id: string): string { return `lock:${id}`; }\nexport async function f(orderId: string) { await redis.del(lockKey(orderId)); }";
    assert_eq!(key_of(t, Language::TypeScript), want);
    let k = "import redis.clients.jedis.Jedis\nfun lockKey(id: String): String = \"lock:\" + id\nfun f(orderId: String) { jedis.del(lockKey(orderId)) }";
    assert_eq!(key_of(k, Language::Kotlin), want);
}

#[test]
fn multibyte_escapes_and_eof_shapes() {
    for lang in [
        Language::Java,
        Language::Python,
        Language::Ruby,
        Language::Php,
        Language::JavaScript,
    ] {
        let _ = extract(
            std::path::Path::new("x"),
            "x = \"a\\é\\😀b\" + 'c\\ü'\nredis.set(k, v, nx=True) or acquired.orElse",
            lang,
        );
        let _ = extract(
            std::path::Path::new("x"),
            "Boolean ok = jedis.set(k, v, \"NX\", \"PX\", 1); ok.orElse(true",
            lang,
        );
    }
}

#[test]
fn go_context_first_is_redis_evidence() {
    let g = "package x\nimport \"github.com/redis/go-redis/v9\"\nfunc f(c *redis.Client) { c.Del(ctx, \"lock:a\"); m.Get(\"x\") }";
    assert_eq!(kinds(g, Language::Go), vec!["Release { checked: false }"]);
}

#[test]
fn concatenated_script_pieces_map_back_to_source() {
    let cases = [
        ("class A { static final String RELEASE = \"if redis.call('get', KEYS[1]) == ARGV[1] then \" +\n      \"return redis.call('del', KEYS[1]) end\"; }", Language::Java),
        ("RELEASE = (\"if redis.call('get', KEYS[1]) == ARGV[1] then \"\n           \"return redis.call('del', KEYS[1]) end\")\n", Language::Python),
        ("<?php\nconst RELEASE = 'if redis.call(\"get\", KEYS[1]) == ARGV[1] then ' .\n  'return redis.call(\"del\", KEYS[1]) end';", Language::Php),
        ("const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1]) end`", Language::JavaScript),
    ];
    for (src, lang) in cases {
        let f = extract(std::path::Path::new("x"), src, lang);
        let s = f
            .scripts
            .first()
            .unwrap_or_else(|| panic!("no script in {lang:?}"));
        assert_eq!(s.name.as_deref(), Some("RELEASE"));
        let off = s
            .text
            .find("redis.call('del'")
            .or_else(|| s.text.find("redis.call(\"del\""))
            .unwrap();
        let at = s.to_source(off);
        assert_eq!(&src[at..at + 16], &s.text[off..off + 16], "{lang:?}");
        assert!(!s.anchors.is_empty());
    }
}

#[test]
fn older_and_bucket_spellings() {
    let p = "import aioredis\nasync def f():\n    await redis.set(k, v, expire=10, exist=redis.SET_IF_NOT_EXIST)\n";
    assert_eq!(kinds(p, Language::Python), vec!["Acquire { expiry: true }"]);
    let j = "import org.redisson.api.*;\nclass A { void f() { redisson.getBucket(\"lock:a\").trySet(token, 10, TimeUnit.SECONDS); redisson.getBucket(\"lock:a\").delete(); } }";
    assert_eq!(
        kinds(j, Language::Java),
        vec!["Acquire { expiry: true }", "Release { checked: false }"]
    );
}

#[test]
fn go_receiver_fields_are_this_fields() {
    let g = "package x\nimport \"github.com/redis/go-redis/v9\"\nfunc (l *RedisLock) Unlock(ctx context.Context) { l.rdb.Del(ctx, l.key) }";
    assert_eq!(
        key_of(g, Language::Go),
        vec![KeyPart::Const("this.key".into())]
    );
}

#[test]
fn parameters_and_loop_variables_shadow_file_level_names() {
    let var = vec![KeyPart::Var("key".into())];
    // a parameter is not the module-level `key` bound after (or before) it
    let py =
        "import redis\nr = redis.Redis()\ndef purge(key):\n    r.delete(key)\nkey = \"user:1\"\n";
    assert_eq!(key_of(py, Language::Python), var);
    let php = "<?php\n$redis = new Redis();\nfunction purge($key) { $redis->del($key); }\n$key = 'report';\n";
    assert_eq!(key_of(php, Language::Php), var);
    let js = "const redis = new Redis()\nconst key = 'a'\nconst purge = async (key) => { await redis.del(key) }\n";
    assert_eq!(key_of(js, Language::JavaScript), var);
    let java = "class A { private String key = \"a\"; void f(String key) { jedis.del(key); } }";
    assert_eq!(key_of(java, Language::Java), var);
    // loop targets and multi-assignment targets are locals too
    let py =
        "import redis\nkey = 'a'\ndef purge(keys):\n    for key in keys:\n        r.delete(key)\n";
    assert_eq!(key_of(py, Language::Python), var);
    let go = "package x\nimport \"github.com/redis/go-redis/v9\"\nvar key = \"a\"\nfunc f(m map[string]string) {\n\tfor _, key := range m {\n\t\trdb.Del(ctx, key)\n\t}\n}\n";
    assert_eq!(key_of(go, Language::Go), var);
    // a local bound once still resolves; the file-level name still resolves elsewhere
    let py = "import redis\nKEY = 'a'\ndef f():\n    r.delete(KEY)\n";
    assert_eq!(key_of(py, Language::Python), vec![KeyPart::Lit("a".into())]);
    // keyword arguments are not assignments: the module constant still resolves
    let py = "import redis\nKEY = 'a'\ndef f(v):\n    r.set(KEY, v, nx=True, ex=5)\n";
    assert_eq!(key_of(py, Language::Python), vec![KeyPart::Lit("a".into())]);
}

#[test]
fn a_receiver_that_runs_a_redis_only_command_is_a_redis_client() {
    let ops = |src: &str, lang: Language| {
        let f = extract(std::path::Path::new("x"), src, lang);
        f.ops
            .iter()
            .map(|o| format!("{:?}", o.kind))
            .collect::<Vec<_>>()
    };
    // no Redis word anywhere: `cache.del` counts because `cache.setnx` does
    let ts = "import { cache } from './m'\nasync function a(k) { await cache.setnx(k, 1) }\nasync function b(k) { await cache.del(k) }\n";
    assert_eq!(ops(ts, Language::TypeScript).len(), 2);
    // `set(k, v, nx=True)` is itself the evidence
    let py =
        "def a(k):\n    return store.set(k, 1, nx=True, ex=5)\ndef b(k):\n    store.delete(k)\n";
    assert_eq!(ops(py, Language::Python).len(), 2);
    // `self.r.setnx` makes `self.r.delete` count, not `self.db.delete`
    let py = "class L:\n    def a(self, k):\n        self.r.setnx(k, 1)\n    def b(self, k):\n        self.r.delete(k)\n        self.db.delete(k)\n";
    assert_eq!(ops(py, Language::Python).len(), 2);
    // without such a call, other receivers stay quiet
    let ts = "import { cache } from './m'\nasync function b(k) { await cache.del(k); cache.set(k, 1) }\n";
    assert!(ops(ts, Language::TypeScript).is_empty());
    // Go: a method receiver named differently in each method is the same object
    let go = "package x\nfunc (a *L) Lock(ctx context.Context, k string) { a.c.SetNX(ctx, k, 1, 0) }\nfunc (b *L) Unlock(ctx context.Context, k string) { b.c.Del(ctx, k) }\n";
    assert_eq!(ops(go, Language::Go).len(), 2);
}

#[test]
fn go_plain_pipelines_are_not_atomic() {
    let atomic = |body: &str| {
        let src = format!("package x\nimport \"github.com/redis/go-redis/v9\"\nfunc f(ctx context.Context, k string) {{\n{body}\n}}\n");
        let f = extract(std::path::Path::new("x.go"), &src, Language::Go);
        f.ops.iter().map(|o| o.atomic()).collect::<Vec<_>>()
    };
    let plain = "\tpipe := rdb.Pipeline()\n\tpipe.SetNX(ctx, k, \"1\", 0)\n\tpipe.Expire(ctx, k, ttl)\n\tpipe.Exec(ctx)";
    assert_eq!(atomic(plain), vec![false, false]);
    let tx = "\tpipe := rdb.TxPipeline()\n\tpipe.SetNX(ctx, k, \"1\", 0)\n\tpipe.Expire(ctx, k, ttl)\n\tpipe.Exec(ctx)";
    assert_eq!(atomic(tx), vec![true, true]);
    let cb = "\trdb.Pipelined(ctx, func(p redis.Pipeliner) error {\n\t\tp.SetNX(ctx, k, \"1\", 0)\n\t\tp.Expire(ctx, k, ttl)\n\t\treturn nil\n\t})";
    assert_eq!(atomic(cb), vec![false, false]);
    let txcb = "\trdb.TxPipelined(ctx, func(p redis.Pipeliner) error {\n\t\tp.SetNX(ctx, k, \"1\", 0)\n\t\tp.Expire(ctx, k, ttl)\n\t\treturn nil\n\t})";
    assert_eq!(atomic(txcb), vec![true, true]);
    // a `pipe` bound to a TxPipeline in another function is another variable
    let src = format!("package x\nimport \"github.com/redis/go-redis/v9\"\nfunc f(ctx context.Context, k string) {{\n{tx}\n}}\nfunc g(ctx context.Context, k string) {{\n{plain}\n}}\n");
    let f = extract(std::path::Path::new("x.go"), &src, Language::Go);
    let flags: Vec<bool> = f.ops.iter().map(|o| o.atomic()).collect();
    assert_eq!(flags, vec![true, true, false, false]);
}

#[test]
fn catch_with_a_filter_is_still_around_the_acquire() {
    let src = "using StackExchange.Redis;\nclass L {\n  bool Take(string n) {\n    try { return db.LockTake(\"lock:\" + n, t, ttl); }\n    catch (RedisException e) when (e.Message != null) { return true; }\n  }\n}\n";
    let f = extract(std::path::Path::new("x.cs"), src, Language::CSharp);
    assert_eq!(f.fail_opens.len(), 1);
    // a catch of a try that does not hold the acquire does not count
    let src = "using StackExchange.Redis;\nclass L {\n  bool Take(string n) {\n    var ok = false;\n    try { ok = db.LockTake(\"lock:\" + n, t, ttl); } catch (RedisException) { return false; }\n    try { Parse(n); } catch (FormatException) { return true; }\n    return ok;\n  }\n}\n";
    let f = extract(std::path::Path::new("x.cs"), src, Language::CSharp);
    assert!(f.fail_opens.is_empty());
}

#[test]
fn generic_methods_get_their_own_scope_and_parameters() {
    // (language, file, source, method name): the body of a method with type
    // parameters is its own scope, not the class's, and its parameters are read
    let cases = [
        (Language::TypeScript, "a.ts", "class S {\n  async setJSON<T>(key: string, value: T, ttl = 180): Promise<void> {\n    await this.client.setex(key, ttl, JSON.stringify(value));\n  }\n}\n", "setJSON"),
        (Language::TypeScript, "a.ts", "class S {\n  async put<K extends Array<string>, V = Map<K, number>>(key: string): Promise<void> {\n    await this.client.setex(key, 60, 'v');\n  }\n}\n", "put"),
        (Language::TypeScript, "a.ts", "export async function setJSON<T>(key: string, value: T) {\n  await redis.setex(key, 60, JSON.stringify(value));\n}\n", "setJSON"),
        (Language::JavaScript, "a.js", "const o = {\n  async put(key, value) {\n    await redis.del(key);\n  },\n};\n", "put"),
        (Language::CSharp, "a.cs", "class S {\n  public async Task SetJson<T>(string key, T value) where T : class {\n    await _db.StringSetAsync(key, Serialize(value));\n  }\n}\n", "SetJson"),
        (Language::Java, "A.java", "class S {\n  public <T> void setJson(String key, T value) {\n    jedis.setex(key, 60, toJson(value));\n  }\n}\n", "setJson"),
        (Language::Kotlin, "a.kt", "fun <T> setJson(key: String, value: T) {\n  redis.opsForValue().set(key, toJson(value))\n}\n", "setJson"),
        (Language::Kotlin, "a.kt", "class S {\n  fun <T> setJson(key: String, value: T) = redis.opsForValue().set(key, toJson(value))\n}\n", "setJson"),
        (Language::CSharp, "a.cs", "class S {\n  public Task<bool> SetJson<T>(string key, T value) => _db.StringSetAsync(key, Serialize(value));\n}\n", "SetJson"),
        (Language::Go, "a.go", "package x\nimport \"github.com/redis/go-redis/v9\"\nfunc SetJSON[T any](ctx context.Context, key string, v T) error {\n\treturn rdb.Set(ctx, key, v, time.Minute).Err()\n}\n", "SetJSON"),
    ];
    let mut wrong = Vec::new();
    for (lang, file, src, name) in cases {
        let f = extract(std::path::Path::new(file), src, lang);
        let Some(op) = f.ops.first() else {
            wrong.push(format!("{file}: no op in {src}"));
            continue;
        };
        let scope = &f.scopes[op.scope as usize].name;
        let sig = f.link.functions.iter().find(|s| s.scope == op.scope);
        if scope != name || !sig.is_some_and(|s| s.params.iter().any(|p| &**p == "key")) {
            wrong.push(format!("{file}: scope `{scope}`, {sig:?} in {src}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // a generic signature without a body declares a method, it calls nothing
    let ts = "interface Cache {\n  getJSON<T>(key: string): Promise<T | null>;\n}\n";
    let toks = lex(ts, Language::TypeScript);
    let st = calls::structure(toks, ts, Language::TypeScript);
    let name = toks.iter().position(|t| t.text() == "getJSON").unwrap();
    assert!(st.decls.is_name(name));
}

/// A test of the object's own field is its state, not a failed result: no
/// failure span; the same test of a local result still is one.
#[test]
fn own_field_tests_are_no_failure_paths() {
    let cases = [
        (Language::TypeScript, "a.ts", "class S {\n  async end() {\n    if (this.processing === false) {\n      await redis.del(k);\n    }\n  }\n}\n", 0),
        (Language::TypeScript, "a.ts", "class S {\n  async end() {\n    if (!this.connected) {\n      await redis.del(k);\n    }\n  }\n}\n", 0),
        (Language::TypeScript, "a.ts", "class S {\n  async end() {\n    const ok = await work();\n    if (ok === false) {\n      await redis.del(k);\n    }\n  }\n}\n", 1),
        (Language::Python, "a.py", "class S:\n    def end(self):\n        if self.processing is False:\n            redis.delete(k)\n", 0),
        (Language::Python, "a.py", "class S:\n    def end(self):\n        if not self.conn:\n            redis.delete(k)\n", 0),
        (Language::Python, "a.py", "class S:\n    def end(self):\n        sent = deliver()\n        if not sent:\n            redis.delete(k)\n", 1),
        (Language::Php, "a.php", "<?php\nclass S {\n  function end() {\n    if ($this->processing === false) {\n      $redis->del($k);\n    }\n  }\n}\n", 0),
        (Language::Java, "A.java", "class S {\n  void end() {\n    if (this.lease == null) {\n      jedis.del(k);\n    }\n  }\n}\n", 0),
        (Language::Java, "A.java", "class S {\n  void end() {\n    String res = send();\n    if (res == null) {\n      jedis.del(k);\n    }\n  }\n}\n", 1),
    ];
    let mut wrong = Vec::new();
    for (lang, file, src, want) in cases {
        let f = extract(std::path::Path::new(file), src, lang);
        if f.failure_spans.len() != want {
            wrong.push(format!(
                "{file}: {} failure spans in {src}",
                f.failure_spans.len()
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn permute_orders_ops_stably() {
    // (as the front-end stashes them: the name token in `order`, the
    // call's index in `scope`)
    let op = |(i, n): (usize, u32)| {
        let mut op = Op::new(
            OpKind::Get,
            crate::facts::KeyExpr::lit("k"),
            None,
            i as u32,
            Span::new(0, 0),
            Span::new(0, 0),
            Client::Unknown,
        );
        op.order = n;
        op
    };
    // name tokens out of order, two equal (kept in their first order)
    let names = [7u32, 3, 9, 3, 1, 8];
    let mut ops: Vec<Op> = names.iter().copied().enumerate().map(op).collect();
    let mut idx: Vec<u32> = (0..ops.len() as u32).collect();
    idx.sort_by_key(|&i| ops[i as usize].order);
    permute(&mut ops, &mut idx);
    assert_eq!(
        ops.iter().map(|o| o.order).collect::<Vec<_>>(),
        vec![1, 3, 3, 7, 8, 9]
    );
    assert_eq!(
        ops.iter().map(|o| o.scope).collect::<Vec<_>>(),
        vec![4, 1, 3, 0, 5, 2]
    );
}

/// The transaction state of a token, from the indexed transitions and
/// ranges, is what a scan of every transition (the scope's last before the
/// token, in the order found) and every range holding it gives — with the
/// transitions in token order or not.
#[test]
fn tx_state_answers_as_a_scan_of_its_marks_and_ranges() {
    let mut seed: u64 = 3;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % n) as usize
    };
    for round in 0..300 {
        let mut marks: Vec<(u32, usize, bool, bool)> = (0..round % 9)
            .map(|_| (next(3) as u32, next(40), next(2) == 0, next(2) == 0))
            .collect();
        if round % 2 == 0 {
            marks.sort_by_key(|m| m.1);
        }
        let ranges: Vec<(usize, usize, bool, bool)> = (0..round % 5)
            .map(|_| {
                let s = next(40);
                (s, s + next(12), next(2) == 0, next(2) == 0)
            })
            .collect();
        let tx = TxState::new(marks.clone(), ranges.clone(), HashSet::default());
        for scope in 0..3u32 {
            for tok in 0..56 {
                let (mut atomic, mut watched) = (false, false);
                for &(s, t, a, w) in &marks {
                    if s == scope && t < tok {
                        atomic = a;
                        watched = w;
                    }
                }
                for &(s, e, a, w) in &ranges {
                    if s < tok && tok < e {
                        atomic |= a;
                        watched |= w;
                    }
                }
                assert_eq!(
                    tx.at(tok, scope),
                    (atomic, watched),
                    "{marks:?} {ranges:?} at {tok} in {scope}"
                );
            }
        }
    }
}

#[test]
fn scope_column_widens_past_two_bytes() {
    // 70,000 functions: the scopes past 65,535 make the column four bytes
    // a token; every token keeps its scope across the change, and across
    // the compaction into runs once the structure is built
    let n = 70_000;
    let mut src = String::new();
    for i in 0..n {
        src.push_str(&format!("function f{i}(){{g({i})}}\n"));
    }
    let toks = lex(&src, Language::JavaScript);
    let st = calls::structure(toks, &src, Language::JavaScript);
    assert!(matches!(st.tok_scope, calls::ScopeColumn::Runs(_)));
    assert_eq!(st.tok_scope.len(), toks.len());
    // each function's `g` is in its own scope, numbered in order
    let scopes: Vec<u32> = toks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.is("g"))
        .map(|(i, _)| st.tok_scope[i])
        .collect();
    assert_eq!(scopes.len(), n);
    assert!(
        scopes.windows(2).all(|w| w[1] == w[0] + 1),
        "scopes in order"
    );
    assert_eq!(scopes[n - 1] as usize, n);
    assert_eq!(
        st.scopes.name(scopes[n - 1] as usize),
        format!("f{}", n - 1)
    );
    assert_eq!(st.tok_scope.get(toks.len()), None);
    // a small file stays two bytes a token (runs would take more)
    let small = "function a(){g(1)}\n";
    let toks = lex(small, Language::JavaScript);
    let st = calls::structure(toks, small, Language::JavaScript);
    assert!(matches!(st.tok_scope, calls::ScopeColumn::Narrow(_)));
    assert_eq!(
        st.tok_scope[toks.iter().position(|t| t.is("g")).unwrap()],
        1
    );
}

#[test]
fn a_reduced_read_keeps_the_signatures_of_functions_with_ops_only() {
    // nothing is linked into a function of a file read without its call
    // sites: only a function with an op of its own gets a summary
    let src = "function take(c,k){return c.set(k,'1','NX','PX',3e4)}function idle(a,b){return a+b}function free(c,k){c.del(k)}";
    let path = std::path::Path::new("b.min.js");
    let read = |sites| extract_packed(path, src, Language::JavaScript, sites).0;
    let full = read(crate::frontend::CallSites::Record);
    let reduced = read(crate::frontend::CallSites::Skip);
    let sigs = |f: &crate::facts::FileFacts| {
        f.link
            .functions
            .iter()
            .map(|s| {
                let params: Vec<String> = s.params.iter().map(|p| p.to_string()).collect();
                (f.scopes[s.scope as usize].name.clone(), params)
            })
            .collect::<Vec<_>>()
    };
    let pair = |n: &str, p: &[&str]| (n.to_string(), p.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        sigs(&full),
        vec![
            pair("take", &["c", "k"]),
            pair("idle", &["a", "b"]),
            pair("free", &["c", "k"])
        ]
    );
    assert_eq!(
        sigs(&reduced),
        vec![pair("take", &["c", "k"]), pair("free", &["c", "k"])]
    );
    assert_eq!(format!("{:?}", full.ops), format!("{:?}", reduced.ops));
    assert_eq!(
        format!("{:?}", full.link.op_values),
        format!("{:?}", reduced.link.op_values)
    );
}

#[test]
fn a_returned_client_call_is_no_returned_key() {
    // the reply of a command is handed back, not a key; a key built in the
    // function and returned is one (both functions hold an acquire, so
    // their returns are read)
    let src = "import redis\nr = redis.Redis()\n\n\
               def acquire(tok):\n    return r.set('jobs:refresh', tok, nx=True)\n\n\
               async def acquire_js(tok):\n    return await r.set('jobs:a', tok, nx=True)\n\n\
               def lock_key(job):\n    key = 'lock:' + job\n    r.set(key, 'x', nx=True, ex=5)\n    return key\n";
    let f = extract(std::path::Path::new("a.py"), src, Language::Python);
    let returns: Vec<String> = f
        .link
        .functions
        .iter()
        .map(|s| {
            s.returns()
                .iter()
                .map(|k| k.display())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    assert_eq!(
        returns,
        vec!["", "", "lock:{job}"],
        "{:?}",
        f.link.functions
    );
}

#[test]
fn client_calls_are_one_bit_each_read_in_order() {
    // repeats count once; a call past the file's calls is none of them
    let c = super::ClientCalls::new([130u32, 3, 64, 3, 999].into_iter(), 200);
    assert_eq!(c.count(), 3);
    assert_eq!(c.iter().collect::<Vec<_>>(), vec![3, 64, 130]);
    assert!(c.contains(&3) && c.contains(&64) && c.contains(&130));
    assert!(!c.contains(&4) && !c.contains(&199) && !c.contains(&999));
    let none = super::ClientCalls::new(std::iter::empty(), 0);
    assert_eq!(none.count(), 0);
    assert!(none.iter().next().is_none() && !none.contains(&0));
}
