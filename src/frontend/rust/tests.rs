//! Unit tests of the Rust front-end's extractions.

use super::extract;
use crate::facts::*;

fn ops(src: &str) -> Vec<Op> {
    extract(src).ops
}

fn kinds(src: &str) -> Vec<(OpKind, String)> {
    ops(src)
        .into_iter()
        .map(|o| (o.kind, o.key.display()))
        .collect()
}

/// [`super::visitor::run_by_pieces`] into a file's facts, its call sites
/// unpacked; `None` when it falls back to the whole parse.
fn by_pieces(
    text: &str,
    items: &[std::ops::Range<usize>],
    piece_bytes: usize,
) -> Option<FileFacts> {
    let mut f = FileFacts::new(Language::Rust);
    let packed = super::visitor::run_by_pieces(text, items, &mut f, piece_bytes)?;
    super::unpack_into(&mut f, packed);
    Some(f)
}

/// The `.rs` files under `dir`, sorted (an unreadable folder skipped).
fn rust_files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
}

/// Every Rust fixture read item by item (`visitor::run_by_pieces`, what a
/// large file gets) gives the facts of the whole file's parse.
#[test]
fn a_file_read_piece_by_piece_gives_the_facts_of_the_whole() {
    let files =
        rust_files_under(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"));
    let (mut pieces, mut ops) = (0, 0);
    for path in &files {
        let src = std::fs::read_to_string(path).unwrap();
        let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
        let item_by_item = super::extract_with(&src, super::MAX_NESTING, 0);
        assert_eq!(item_by_item, whole, "{}", path.display());
        let text = super::scan::blank_bom_and_shebang(&src);
        if let Some(f) = by_pieces(
            &text,
            &super::scan::top_level_items(&text),
            super::visitor::PIECE_BYTES,
        ) {
            pieces += 1;
            ops += f.ops.len();
        }
    }
    // (not a fall-back to the whole parse: nearly all of them went by pieces)
    assert!(
        files.len() >= 40 && pieces + 2 >= files.len(),
        "{pieces} of {}",
        files.len()
    );
    assert!(ops >= 100, "{ops} ops");
}

/// A piece cut where no item ends (a constant's struct literal closed
/// before a method called on it: `scan::top_level_items` ends an item at
/// a closing brace outside parentheses) is joined to the next and read by
/// pieces all the same, with the whole parse's facts. A brace closed
/// inside parentheses (an attribute's `json!({…})`, a `Lazy::new(|| {…})`)
/// ends no item.
#[test]
fn a_piece_cut_where_no_item_ends_is_joined_to_the_next() {
    let src = r#"use redis::Commands;

#[derive(Debug, ToSchema)]
#[schema(example = json!({
    "id": "e3e3",
    "name": "Trieve",
}))]
pub struct Org {
    pub id: String,
}

pub static NAMES: Lazy<Vec<String>> = Lazy::new(|| {
    vec!["a".to_string()]
});

const OPTS: Opts = Opts { ttl: 30 }.tuned();

fn take(con: &mut redis::Connection) -> redis::RedisResult<()> {
    let _: bool = con.set_nx("lock:org", 1)?;
    let _: () = con.del("lock:org")?;
    Ok(())
}
"#;
    let text = super::scan::blank_bom_and_shebang(src);
    let items = super::scan::top_level_items(&text);
    let cut: Vec<&str> = items
        .iter()
        .map(|r| &text[r.clone()])
        .filter(|t| syn::parse_file(t).is_err())
        .collect();
    // the cut this test is about: the constant's `.tuned();` left alone
    // (and the constant before it), nothing else
    assert_eq!(cut.len(), 2, "{cut:?}");
    assert!(cut[1].trim() == ".tuned();", "{cut:?}");
    let f = by_pieces(&text, &items, 0).expect("read by pieces");
    let whole = super::extract_with(src, super::MAX_NESTING, usize::MAX);
    assert_eq!(f, whole);
    assert_eq!(whole.ops.len(), 2);
    assert_eq!(super::extract_with(src, super::MAX_NESTING, 0), whole);
}

/// A module or `impl` larger than a piece is read by pieces of its
/// items, each under its header (and those of the modules around it): the
/// same facts as the whole parse, test code still test code, the type
/// still the owner.
#[test]
fn a_large_module_is_read_by_pieces_of_its_items() {
    let mut src =
        String::from("use redis::Commands;\n\npub mod outer {\n/// the store\npub mod store {\n    //! Its locks.\n    #![cfg(test)]\n    // (and a comment)\n");
    for i in 0..40 {
        src.push_str(&format!(
            "    fn take_{i}(con: &mut redis::Connection) -> redis::RedisResult<()> {{\n        \
             let _: bool = con.set_nx(\"lock:s{i}\", 1)?;\n        let _: () = con.del(\"lock:s{i}\")?;\n        \
             Ok(())\n    }}\n\n"
        ));
    }
    src.push_str(
        "}\n}\n\npub struct Store;\n\n/// its methods\n#[allow(dead_code)]\nimpl Store {\n",
    );
    for i in 0..40 {
        src.push_str(&format!(
            "    pub fn put_{i}(&self, con: &mut redis::Connection) -> redis::RedisResult<()> {{\n        \
             let _: bool = con.set_nx(\"lock:p{i}\", 1)?;\n        Ok(())\n    }}\n\n"
        ));
    }
    src.push_str("}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n");
    for i in 0..40 {
        src.push_str(&format!(
            "    #[test]\n    fn t_{i}() {{\n        let mut con = client();\n        \
             let _: bool = con.set_nx(\"lock:t{i}\", 1).unwrap();\n    }}\n\n"
        ));
    }
    src.push_str("}\n");
    let text = super::scan::blank_bom_and_shebang(&src);
    let items = super::scan::top_level_items(&text);
    assert_eq!(items.len(), 5);
    let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
    assert_eq!(whole.ops.len(), 160);
    assert!(whole
        .scopes
        .iter()
        .any(|s| s.owner.as_deref() == Some("Store")));
    // pieces of 256 bytes: each module in many pieces (`store`, which
    // opens with inner attributes, under both headers)
    let (pieces, _, deepest) = super::visitor::cut_counts(&text, &items, 256);
    assert!(
        pieces >= 30 && deepest == 2,
        "{pieces} pieces, {deepest} headers"
    );
    let f = by_pieces(&text, &items, 256).expect("read by pieces");
    assert_eq!(f, whole);
    assert_eq!(super::extract_with(&src, super::MAX_NESTING, 0), whole);
    let test_scopes = whole.scopes.iter().filter(|s| s.is_test).count();
    // (`store` is test code by its inner attribute)
    assert_eq!(test_scopes, 80, "{:?}", whole.scopes);
}

/// A fn larger than a piece is read by parts of its body, each under
/// its header (and those of the impl and module around it), the fn entered
/// at the first part and left at the last: locals, a check's exit and a
/// raw command carried from one part to the next, test code still test
/// code, the same facts as the whole parse.
#[test]
fn a_long_fn_is_read_part_by_part() {
    let mut body = String::new();
    for i in 0..30 {
        body.push_str(&format!(
            "        let k{i} = format!(\"lock:{{}}:{i}\", id);\n        \
             let _: bool = con.set_nx(&k{i}, HOLDER)?;\n"
        ));
    }
    let tail = "        if con.exists(\"lock:guard\")? {\n            return Ok(());\n        }\n\
                \x20       let mut c = redis::cmd(\"SET\");\n        c.arg(&k0);\n";
    let mut src = String::from(
        "use redis::Commands;\nconst HOLDER: &str = \"1\";\n\npub mod store {\n\
         pub struct Store;\nimpl Store {\n    \
         pub fn take(&self, con: &mut redis::Connection, id: u64) -> redis::RedisResult<()> {\n",
    );
    src.push_str(&body);
    src.push_str(tail);
    src.push_str(&body.replace("set_nx", "set"));
    src.push_str(
        "        c.arg(\"v\").arg(\"NX\").query::<()>(con)?;\n        \
         let _: () = con.set(\"lock:guard\", 1)?;\n        Ok(())\n    }\n}\n}\n\n\
         #[test]\nfn checks(con: &mut redis::Connection) {\n",
    );
    src.push_str(&body);
    src.push_str("    let _: () = con.del(&k1).unwrap();\n}\n");
    let text = super::scan::blank_bom_and_shebang(&src);
    let items = super::scan::top_level_items(&text);
    let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
    assert!(whole.ops.len() >= 90, "{:?}", whole.ops);
    assert!(
        !whole.absence_guards.is_empty(),
        "{:?}",
        whole.absence_guards
    );
    assert!(whole
        .ops
        .iter()
        .any(|o| matches!(o.value(), Some(ValueExpr::Constant(v)) if &**v == "1")));
    // pieces of 256 bytes: both fns in many parts (the one after the raw
    // command's `let` in one)
    let (_, parts, _) = super::visitor::cut_counts(&text, &items, 256);
    assert!(parts >= 10, "{parts} parts");
    let f = by_pieces(&text, &items, 256).expect("read by pieces");
    assert_eq!(f, whole);
    assert_eq!(super::extract_with(&src, super::MAX_NESTING, 0), whole);
    let scopes: Vec<(&str, bool)> = whole
        .scopes
        .iter()
        .map(|s| (s.name.as_str(), s.is_test))
        .collect();
    assert!(scopes.contains(&("take", false)), "{scopes:?}");
    assert!(scopes.contains(&("checks", true)), "{scopes:?}");
}

/// A block-like statement larger than a piece (a `match` of many arms,
/// a `let` whose value is one or an `if`,
/// `for`, `while`, `loop`, labelled, `unsafe`, a `#[cfg]` block, an `if`
/// with and without `else`, nested in each other, with and without a `;`
/// after it, a fn whose one statement it is) is read by parts of its
/// body under its header, entered at its first part and left at its
/// last: the facts of the whole parse
/// (ops and their depths, a helper whose body is one `match`, a `match`
/// on an acquire's result that fails open in a later part, a check's exit
/// inside a loop, a raw command inside a loop).
#[test]
fn a_large_block_statement_is_read_part_by_part() {
    let arms: String = (0..40)
        .map(|i| match i % 3 {
            0 => format!("            Kind::K{i} => \"lock:k{i}\",\n"),
            1 => format!("            Kind::K{i} => {{ \"lock:k{i}\" }}\n"),
            _ => format!("            Kind::K{i} if ready => {{ \"lock:k{i}\" }},\n"),
        })
        .collect();
    let ops: String = (0..25)
        .map(|i| {
            format!("            let _: bool = con.set_nx(format!(\"lock:{{}}:{i}\", x), 1)?;\n")
        })
        .collect();
    let src = format!(
        "use redis::Commands;\n\
         fn key_of(k: Kind, ready: bool) -> String {{\n    \
         match k {{\n{arms}        _ => \"lock:other\",\n    }}.to_string()\n}}\n\n\
         fn lock_name(k: Kind) -> String {{\n    match k {{\n{arms}        _ => format!(\"lock:{{}}\", 1),\n    }}\n}}\n\n\
         fn work(con: &mut redis::Connection, xs: &[u64], k: Kind) -> redis::RedisResult<()> {{\n    \
         let first = con.set_nx(\"lock:first\", 1);\n    \
         match first {{\n{arms2}            Err(_) => true,\n        }};\n    \
         'outer: for x in xs.iter().filter(|x| {{ **x > 0 }}) {{\n        \
         if con.exists(\"lock:guard\")? {{\n            continue 'outer;\n        }}\n{ops}        \
         let _: () = con.set(\"lock:guard\", 1)?;\n        \
         while let Some(y) = Some(1) {{\n{ops}            break;\n        }}\n        \
         let mut c = redis::cmd(\"SET\");\n        c.arg(\"lock:raw\");\n{ops}        \
         c.arg(\"v\").arg(\"NX\").query::<()>(con)?;\n    }}\n    \
         #[cfg(feature = \"x\")]\n    {{\n{ops}    }}\n    \
         loop {{\n        unsafe {{\n{ops}        }}\n        break;\n    }}\n    \
         if con.exists(\"lock:big\")? {{\n{ops}    }} else {{\n        \
         let _: () = con.set(\"lock:big\", 1)?;\n    }}\n    \
         if !con.exists(\"lock:gate\")? {{\n{ops}        \
         let _: bool = con.set_nx(\"lock:gate\", 1)?;\n    }};\n    \
         let _: bool = con.set_nx(lock_name(k), 1)?;\n    \
         let key: &str = match k {{\n{arms}        _ => \"lock:other\",\n    }};\n    \
         let _: bool = con.set_nx(key, 1)?;\n    \
         let got = match con.set_nx(\"lock:let\", 1) {{\n{arms2}            Err(_) => true,\n        }};\n    \
         if got {{ let _: () = con.del(\"lock:let\")?; }}\n    \
         let name = match k {{\n{arms}        _ => \"lock:n\",\n    }}.to_string();\n    \
         let _: bool = con.set_nx(name, 1)?;\n    \
         let owner = if !con.exists(\"lock:own\")? {{\n{ops}        for y in xs {{\n{ops}        }}\n        \"lock:a\"\n    }} else {{\n        \"lock:b\"\n    }};\n    \
         let _: () = con.del(owner)?;\n    Ok(())\n}}\n",
        arms2 = (0..30)
            .map(|i| format!("            Ok(v) if v == {i} => {{ let _: () = con.del(\"lock:m{i}\")?; true }}\n"))
            .collect::<String>(),
    );
    let text = super::scan::blank_bom_and_shebang(&src);
    let items = super::scan::top_level_items(&text);
    let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
    assert!(whole.ops.len() >= 150, "{}", whole.ops.len());
    assert!(!whole.fail_opens.is_empty());
    assert!(!whole.absence_guards.is_empty());
    for piece_bytes in [512, 256, 64] {
        let (inside, deepest) = super::visitor::block_counts(&text, &items, piece_bytes);
        assert!(
            inside >= 10 && deepest >= 2,
            "{inside} pieces, {deepest} deep"
        );
        let f = by_pieces(&text, &items, piece_bytes).expect("read by pieces");
        assert_eq!(f, whole, "pieces of {piece_bytes}");
    }
    assert_eq!(super::extract_with(&src, super::MAX_NESTING, 0), whole);
    // the `let`s whose value is a `match` and nothing more are cut inside
    let list = super::visitor::piece_list(&text, &items, 256);
    let cut_at = |stmt: &str| {
        let at = text.find(stmt).expect("in the source");
        list.iter()
            .any(|p| p.contains(&format!("[{at}*")) || p.contains(&format!(" {at}*")))
    };
    assert!(
        cut_at("let key") && cut_at("let got") && cut_at("let owner"),
        "{list:?}"
    );
    // and so is a large statement an `if`'s last part opens with
    assert!(cut_at("for y in xs"), "{list:?}");
    assert!(!cut_at("let name"), "{list:?}");
    // the fn whose body is one `match` cut into parts is a helper, its
    // body where the whole parse has it
    let helpers = super::visitor::helpers_found(&text, &items, usize::MAX);
    assert!(helpers.iter().any(|h| h.0 == "lock_name"), "{helpers:?}");
    assert_eq!(super::visitor::helpers_found(&text, &items, 256), helpers);
}

/// A macro item larger than a piece (`name! { … }`) is read by parts of
/// its body cut where its expressions end (`,`, `;`, `=>` outside
/// brackets), each under its header, with the facts of the whole parse.
#[test]
fn a_large_macro_item_is_read_part_by_part() {
    let mut src = String::from("use redis::Commands;\n\nroutes! {\n");
    // (a body of more than 16 kB: one of less is parsed as a list first)
    for i in 0..100 {
        src.push_str(&format!(
            "    \"r{i}\" => con.set_nx(format!(\"lock:{{}}:{i}\", id), \"1\"),\n    \
             con.del(\"lock:d{i}\"); by::<A, B>(|a, b| con.set_nx(a, b)),\n    \
             /// a doc\n    fn f{i}<K: ToRedisArgs, V>(k: K) {{ cmd(\"SET\").arg(k).arg(\"NX\") }}\n"
        ));
    }
    // (closures whose commas cut them where the whole body is cut too)
    for _ in 0..20 {
        src.push_str("    |a, b| con.set_nx(\"lock:t\", \"1\"),\n");
    }
    src.push_str("}\n");
    let text = super::scan::blank_bom_and_shebang(&src);
    let items = super::scan::top_level_items(&text);
    let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
    assert!(whole.ops.len() >= 200, "{:?}", whole.ops);
    let (pieces, _, deepest) = super::visitor::cut_counts(&text, &items, 256);
    assert!(
        pieces >= 50 && deepest == 1,
        "{pieces} pieces, {deepest} headers"
    );
    let f = by_pieces(&text, &items, 256).expect("read by pieces");
    assert_eq!(f, whole);
    assert_eq!(super::extract_with(&src, super::MAX_NESTING, 0), whole);
}

/// A piece that no join mends (a file cut short) sends the file to the
/// whole parse, as before.
#[test]
fn a_piece_no_join_mends_falls_back_to_the_whole_parse() {
    let src = "fn a() { let x = (1; }\nfn b() {}\n";
    let text = super::scan::blank_bom_and_shebang(src);
    let mut f = FileFacts::new(Language::Rust);
    assert!(super::visitor::run_by_pieces(
        &text,
        &super::scan::top_level_items(&text),
        &mut f,
        super::visitor::PIECE_BYTES
    )
    .is_none());
    assert_eq!(f, FileFacts::new(Language::Rust));
}

/// Prints the pieces a file (`LL_PIECES`) is cut into, largest last.
#[test]
fn dump_pieces() {
    let Ok(path) = std::env::var("LL_PIECES") else {
        return;
    };
    let src = std::fs::read_to_string(path).unwrap();
    let text = super::scan::blank_bom_and_shebang(&src);
    let items = super::scan::top_level_items(&text);
    for p in super::visitor::piece_list(&text, &items, super::visitor::PIECE_BYTES) {
        eprintln!("{p}");
    }
}

#[test]
fn dump() {
    let src = std::env::var("LL_DUMP").unwrap_or_default();
    if src.is_empty() {
        return;
    }
    let text = std::fs::read_to_string(&src).unwrap();
    let f = extract(&text);
    for s in f.scopes.iter().enumerate() {
        eprintln!("scope {s:?}");
    }
    for o in &f.ops {
        let at = text.get(o.name_span.start()..o.span.end()).unwrap_or("?");
        eprintln!(
            "{:?} key={} val={:?} scope={} depth={} atomic={} watched={} {:?} `{}`",
            o.kind,
            o.key.display(),
            o.value(),
            o.scope,
            o.depth(),
            o.atomic(),
            o.watched(),
            o.client,
            at
        );
    }
    for s in &f.scripts {
        eprintln!(
            "script {:?} calls={} text={:?}",
            s.name,
            s.lua.calls.len(),
            &s.text.chars().take(60).collect::<String>()
        );
    }
    for fo in &f.fail_opens {
        eprintln!(
            "failopen {} `{}`",
            fo.key.display(),
            text.get(fo.span.range()).unwrap_or("?")
        );
    }
    eprintln!("notes {:?}", f.notes);
}

#[test]
fn raw_set_options_any_order_and_case() {
    let k = kinds(
        r#"use redis::Commands;
fn a(con: &mut redis::Connection, id: u64, t: String) {
    let _: () = redis::cmd("set").arg(format!("lock:{id}")).arg(&t).arg("px").arg(3000).arg("nx").query(con).unwrap();
    let _: () = redis::cmd("SET").arg(format!("lock:{}", id)).arg(&t).arg("NX").query(con).unwrap();
    let _: () = redis::Cmd::new().arg("SET").arg("k").arg("v").arg("XX").arg("PX").arg(5).query(con).unwrap();
}"#,
    );
    assert_eq!(
        k,
        vec![
            (OpKind::Acquire { expiry: true }, "lock:{id}".to_string()),
            (OpKind::Acquire { expiry: false }, "lock:{id}".to_string()),
            (OpKind::Expire, "k".to_string()),
        ]
    );
}

fn one(src: &str) -> Op {
    let v = ops(src);
    assert_eq!(v.len(), 1, "{v:#?}");
    v.into_iter().next().unwrap()
}

fn lit(s: &str) -> KeyPart {
    KeyPart::Lit(s.into())
}

fn var(s: &str) -> KeyPart {
    KeyPart::Var(s.into())
}

#[test]
fn format_positional_inline_and_concat_keys_are_the_same() {
    let srcs = [
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: u64) { let _: () = c.del(format!("lock:{}", id)).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: u64) { let _: () = c.del(format!("lock:{id}")).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: u64) { let _: () = c.del(format!("lock:{0}", id)).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: u64) { let _: () = c.del(format!("lock:{x}", x = id)).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: String) { let _: () = c.del("lock:".to_string() + &id).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: u64) { let k = format!("lock:{id}"); let _: () = c.del(&k).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: u64) { let _: () = c.del(format!("lock:{:>8}", id).as_str()).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: &str) { let _: () = c.del(["lock:", id].concat()).unwrap(); }"#,
        r#"use redis::Commands; fn f(c: &mut redis::Connection, id: &str) { let _: () = c.del(["lock", id].join(":")).unwrap(); }"#,
    ];
    for s in srcs {
        let op = one(s);
        assert_eq!(op.kind, OpKind::Release { checked: false }, "{s}");
        assert_eq!(op.key.parts, vec![lit("lock:"), var("id")], "{s}");
    }
}

#[test]
fn consts_fields_and_helpers() {
    let op = one(r#"use redis::Commands;
const LOCK_PREFIX: &str = "lock:";
fn f(c: &mut redis::Connection, id: u64) { let _: () = c.del(format!("{}{}", LOCK_PREFIX, id)).unwrap(); }"#);
    assert_eq!(op.key.parts, vec![lit("lock:"), var("id")]);
    assert!(op.key.idents.contains(&"LOCK_PREFIX".to_string()));

    let op = one(r#"use redis::Commands;
struct L { key: String }
impl L { fn release(&self, c: &mut redis::Connection) { let _: () = c.del(&self.key).unwrap(); } }"#);
    assert_eq!(op.key.parts, vec![KeyPart::Const("self.key".into())]);

    let op = one(r#"use redis::Commands;
fn lock_key(id: u64) -> String { format!("lock:{id}") }
fn f(c: &mut redis::Connection, job: Job) { let _: () = c.del(lock_key(job.id)).unwrap(); }"#);
    assert_eq!(op.key.parts, vec![lit("lock:"), var("job.id")]);

    let op = one(r#"use redis::Commands;
struct S;
impl S {
    fn key(&self, id: u64) -> String { format!("{}:{}", Self::PREFIX, id) }
    const PREFIX: &'static str = "mutex";
    fn f(&self, c: &mut redis::Connection, n: u64) { let _: () = c.del(self.key(n)).unwrap(); }
}"#);
    assert_eq!(op.key.parts, vec![lit("mutex:"), var("n")]);
}

#[test]
fn values_constant_unique_weak() {
    let v = |s: &str| one(s).value().cloned();
    let pre = "use redis::Commands;\nconst HOLDER: &str = \"me\";\n";
    assert_eq!(
        v(&format!("{pre}fn f(c: &mut redis::Connection) {{ let _: bool = c.set_nx(\"lock:a\", \"1\").unwrap(); }}")),
        Some(ValueExpr::Constant("\"1\"".into()))
    );
    assert_eq!(
        v(&format!("{pre}fn f(c: &mut redis::Connection) {{ let _: bool = c.set_nx(\"lock:a\", HOLDER).unwrap(); }}")),
        Some(ValueExpr::Constant("\"me\"".into()))
    );
    assert_eq!(
        v(&format!("{pre}fn f(c: &mut redis::Connection) {{ let t = true; let _: bool = c.set_nx(\"lock:a\", t).unwrap(); }}")),
        Some(ValueExpr::Constant("true".into()))
    );
    assert_eq!(
        v(&format!("{pre}fn f(c: &mut redis::Connection) {{ let t = uuid::Uuid::new_v4().to_string(); let _: bool = c.set_nx(\"lock:a\", &t).unwrap(); }}")),
        Some(ValueExpr::Unique)
    );
    assert!(matches!(
        v(&format!("{pre}fn f(c: &mut redis::Connection) {{ let _: bool = c.set_nx(\"lock:a\", format!(\"{{:?}}\", std::thread::current().id())).unwrap(); }}")),
        Some(ValueExpr::Weak(_))
    ));
    assert_eq!(
        v(&format!("{pre}fn f(c: &mut redis::Connection, token: &str) {{ let _: bool = c.set_nx(\"lock:a\", token).unwrap(); }}")),
        Some(ValueExpr::Unknown)
    );
}

/// A static made by a call of another module's function (`Lazy::new`) is
/// not parsed again for a key, a value or a string: its key is the
/// static's name, its value what the words of the call's text say, as
/// when it was parsed again; a one-segment call (a helper the file may
/// define) is still looked into.
#[test]
fn statics_made_by_calls_keep_their_keys_and_values() {
    let pre = "use redis::Commands;\nuse std::sync::LazyLock as Lazy;\n\
        static TOKEN: Lazy<String> = Lazy::new(|| uuid::Uuid::new_v4().to_string());\n\
        static KEY: Lazy<String> = Lazy::new(|| format!(\"lock:{}\", 1));\n\
        static HOST: Lazy<String> = Lazy::new(|| hostname::get().unwrap());\n\
        const HELPER: &str = helper();\n\
        const fn helper() -> &'static str { \"lock:h\" }\n";
    let op = |body: &str| {
        one(&format!(
            "{pre}fn f(c: &mut redis::Connection) {{ {body} }}"
        ))
    };
    let o = op("let _: bool = c.set_nx(&*KEY, TOKEN.clone()).unwrap();");
    assert_eq!(o.key.parts, vec![KeyPart::Const("KEY".into())]);
    assert_eq!(o.value(), Some(&ValueExpr::Unique));
    assert!(matches!(
        op("let _: bool = c.set_nx(\"lock:a\", HOST.as_str()).unwrap();").value(),
        Some(ValueExpr::Weak(_))
    ));
    assert_eq!(
        op("let _: bool = c.set_nx(HELPER, \"1\").unwrap();")
            .key
            .parts,
        vec![lit("lock:h")]
    );
}

#[test]
fn set_options_let_bound_bare_and_extend() {
    let op = one(
        r#"use redis::{Commands, SetOptions, ExistenceCheck::NX, SetExpiry::PX};
fn f(c: &mut redis::Connection, t: &str) {
    let opts = SetOptions::default().with_expiration(PX(100)).conditional_set(NX);
    let _: bool = c.set_options("lock:x", t, opts).unwrap();
}"#,
    );
    assert_eq!(op.kind, OpKind::Acquire { expiry: true });
    let op = one(
        r#"use redis::{Commands, SetOptions, ExistenceCheck, SetExpiry};
fn f(c: &mut redis::Connection, t: &str) {
    let _: bool = c.set_options("lock:x", t, SetOptions::default().conditional_set(ExistenceCheck::XX).with_expiration(SetExpiry::EX(5))).unwrap();
}"#,
    );
    assert_eq!(op.kind, OpKind::Expire);
    let op = one(r#"use redis::{Commands, SetOptions, ExistenceCheck};
fn f(c: &mut redis::Connection, t: &str) {
    let _: bool = c.set_options("lock:x", t, SetOptions::default().conditional_set(ExistenceCheck::NX)).unwrap();
}"#);
    assert_eq!(op.kind, OpKind::Acquire { expiry: false });
}

#[test]
fn fred_and_rustis_shapes() {
    let k = kinds(
        r#"use fred::prelude::*;
async fn f(c: &Client, t: String) {
    let _: () = c.set("lock:a", &t, Some(Expiration::PX(10)), Some(SetOptions::NX), false).await.unwrap();
    let _: () = c.set("lock:b", &t, None, Some(SetOptions::NX), false).await.unwrap();
    let _: () = c.set("lock:c", &t, Some(Expiration::EX(10)), Some(SetOptions::XX), false).await.unwrap();
    let _: () = c.set("plain", &t, None, None, false).await.unwrap();
    let _: () = c.setnx("lock:d", &t).await.unwrap();
    let _: () = c.expire("lock:d", 10, None).await.unwrap();
    let _: () = c.getdel("tok").await.unwrap();
    let _: () = c.custom(CustomCommand::new_static("DEL", ClusterHash::FirstKey, false), vec!["lock:e"]).await.unwrap();
}"#,
    );
    assert_eq!(
        k,
        vec![
            (OpKind::Acquire { expiry: true }, "lock:a".into()),
            (OpKind::Acquire { expiry: false }, "lock:b".into()),
            (OpKind::Expire, "lock:c".into()),
            (OpKind::Set { expiry: false }, "plain".into()),
            (OpKind::Acquire { expiry: false }, "lock:d".into()),
            (OpKind::Expire, "lock:d".into()),
            (OpKind::GetDel, "tok".into()),
            (OpKind::Release { checked: false }, "lock:e".into()),
        ]
    );
    let f = extract(
        r#"use rustis::commands::*;
async fn f(c: &Client, t: String) {
    c.set_with_options("lock:a", &t, SetCondition::NX, SetExpiration::Px(10)).await.unwrap();
    c.delex("lock:a", DelexCondition::IFEQ(t)).await.unwrap();
    c.eval::<i32>(CallBuilder::script("return redis.call('del', KEYS[1])").keys("lock:a")).await.unwrap();
}"#,
    );
    let got: Vec<_> = f.ops.iter().map(|o| (o.kind.clone(), o.client)).collect();
    assert_eq!(
        got,
        vec![
            (OpKind::Acquire { expiry: true }, Client::Rustis),
            (OpKind::Release { checked: true }, Client::Rustis),
            (OpKind::Eval { script: Some(0) }, Client::Rustis),
        ]
    );
}

#[test]
fn pipelines_transactions_and_multi() {
    let f = extract(
        r#"use redis::Commands;
fn a(c: &mut redis::Connection) {
    let mut p = redis::pipe();
    p.atomic();
    p.set_nx("lock:a", 1).expire("lock:a", 5);
    let _: () = p.query(c).unwrap();
    let _: () = redis::pipe().set_nx("lock:b", 1).expire("lock:b", 5).query(c).unwrap();
    let _: () = redis::pipe().cmd("SET").arg("lock:c").arg(1).arg("NX").ignore().cmd("EXPIRE").arg("lock:c").arg(5).atomic().query(c).unwrap();
}"#,
    );
    let got: Vec<_> = f
        .ops
        .iter()
        .map(|o| (o.kind.clone(), o.key.display(), o.atomic()))
        .collect();
    assert_eq!(
        got,
        vec![
            (OpKind::Acquire { expiry: false }, "lock:a".into(), true),
            (OpKind::Expire, "lock:a".into(), true),
            (OpKind::Acquire { expiry: false }, "lock:b".into(), false),
            (OpKind::Expire, "lock:b".into(), false),
            (OpKind::Acquire { expiry: false }, "lock:c".into(), true),
            (OpKind::Expire, "lock:c".into(), true),
        ]
    );
    let f = extract(
        r#"use fred::prelude::*;
async fn a(c: &Client) {
    let trx = c.multi();
    let _: () = trx.setnx("lock:t", 1).await.unwrap();
    let _: () = trx.expire("lock:t", 5, None).await.unwrap();
    let _: () = trx.exec(true).await.unwrap();
}"#,
    );
    assert!(
        f.ops.len() == 2 && f.ops.iter().all(|o| o.atomic()),
        "{:#?}",
        f.ops
    );
    let f = extract(
        r#"use redis::Commands;
fn r(c: &mut redis::Connection, key: &str, other: &str, t: &str) -> redis::RedisResult<()> {
    redis::transaction(c, &[key], |c, pipe| {
        let v: Option<String> = c.get(key)?;
        let _: () = c.del(other)?;
        if v.as_deref() == Some(t) { pipe.del(key).ignore(); }
        pipe.query(c)
    })
}"#,
    );
    let got: Vec<_> = f
        .ops
        .iter()
        .map(|o| (o.kind.clone(), o.atomic(), o.watched()))
        .collect();
    assert_eq!(
        got,
        vec![
            (OpKind::Get, true, true),
            (OpKind::Release { checked: false }, true, false),
            (OpKind::Release { checked: false }, true, true),
        ]
    );
}

#[test]
fn calls_inside_macros_keep_their_spans() {
    let src = r#"use redis::AsyncCommands;
async fn f(a: &mut C, b: &mut C) {
    let _ = tokio::try_join!(a.del::<_, ()>("lock:one"), b.pexpire::<_, ()>("lock:two", 5));
    println!("{:?}", vec![a.get::<_, String>("lock:three").await]);
    info!("DEL lock:four and SETNX are just words here");
}"#;
    let f = extract(src);
    let got: Vec<_> = f
        .ops
        .iter()
        .map(|o| {
            (
                o.kind.clone(),
                o.key.display(),
                src[o.name_span.range()].to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                OpKind::Release { checked: false },
                "lock:one".into(),
                "del".into()
            ),
            (OpKind::Expire, "lock:two".into(), "pexpire".into()),
            (OpKind::Get, "lock:three".into(), "get".into()),
        ]
    );
}

#[test]
fn non_redis_receivers_are_silent() {
    let src = r#"use std::collections::HashMap;
fn f(map: &mut HashMap<String, u64>, lock_key: &str) {
    let cache: HashMap<String, String> = HashMap::new();
    let _ = map.get(lock_key);
    let _ = cache.get("lock:a");
    map.remove(lock_key);
    let v = vec![1];
    let _ = v.get(0);
}
fn g(headers: &Headers, settings: &Settings) {
    let _ = headers.get("x");
    settings.set("a", 1);
}"#;
    assert!(ops(src).is_empty(), "{:#?}", ops(src));
    // Without a Redis import, an ambiguous name needs a Redis-looking receiver or key.
    let src = r#"fn f(store: &Store, id: u64) { store.del(format!("user:{id}")); conn.del(format!("user:{id}")); }"#;
    assert_eq!(ops(src).len(), 1);
}

#[test]
fn scripts_and_anchors() {
    let src = "use redis::Script;\nconst UNLOCK: &str = \"local x = 1\\n  return redis.call('del', KEYS[1])\";\nfn f(c: &mut redis::Connection, lock_key: &str) { let _: i32 = Script::new(UNLOCK).key(lock_key).invoke(c).unwrap(); }\n";
    let f = extract(src);
    assert_eq!(f.scripts.len(), 1);
    let s = &f.scripts[0];
    assert_eq!(s.name.as_deref(), Some("UNLOCK"));
    let at = s.text.find("redis.call").unwrap();
    let src_at = s.to_source(at);
    assert!(
        src[src_at..].starts_with("redis.call"),
        "{}",
        &src[src_at..]
    );
    assert_eq!(f.ops.len(), 1);
    assert_eq!(f.ops[0].kind, OpKind::Eval { script: Some(0) });

    let src = "fn f(c: &mut redis::Connection, id: u64) {\n let _: i32 = redis::cmd(\"EVAL\").arg(r#\"return redis.call(\"del\", KEYS[1])\"#).arg(1).arg(format!(\"lock:{id}\")).query(c).unwrap();\n}\n";
    let f = extract(src);
    assert_eq!(f.scripts.len(), 1);
    assert_eq!(f.ops[0].kind, OpKind::Eval { script: Some(0) });
    assert_eq!(f.ops[0].key.display(), "lock:{id}");
    let s = &f.scripts[0];
    assert!(src[s.to_source(7)..].starts_with("redis.call"));
}

#[test]
fn fail_open_shapes() {
    let f = extract(
        r#"use redis::AsyncCommands;
async fn a(c: &mut C) -> bool { c.set_nx("lock:a", 1).await.unwrap_or(true) }
async fn b(c: &mut C) -> bool { c.set_nx("lock:b", 1).await.or(Ok(true)).unwrap() }
async fn d(c: &mut C) -> bool { c.set_nx("lock:d", 1).await.unwrap_or_else(|_| true) }
async fn e(c: &mut C) -> Result<bool, E> { match c.set_nx("lock:e", 1).await { Ok(v) => Ok(v), Err(_) => Ok(true) } }
async fn g(c: &mut C) -> bool { c.set_nx("lock:g", 1).await.unwrap_or_default() }
async fn h(c: &mut C) -> bool { match c.set_nx("lock:h", 1).await { Ok(v) => v, Err(_) => false } }
async fn i(c: &mut C) -> bool { c.get::<_, bool>("lock:i").await.unwrap_or(true) }
async fn j(c: &mut C) -> bool { let r: RedisResult<bool> = c.set_nx("lock:j", 1).await; r.is_err() || r.unwrap_or(false) }
async fn k(c: &mut C, other: Result<(), E>) -> bool { let r: RedisResult<bool> = c.set_nx("lock:k", 1).await; other.is_err() || r.unwrap_or(false) }
"#,
    );
    let keys: Vec<String> = f.fail_opens.iter().map(|x| x.key.display()).collect();
    assert_eq!(keys, vec!["lock:a", "lock:b", "lock:d", "lock:e", "lock:j"]);
}

#[test]
fn depth_order_and_tests() {
    let f = extract(
        r#"use redis::Commands;
fn a(c: &mut redis::Connection) {
    let ok: bool = c.set_nx("lock:a", 1).unwrap();
    if ok {
        let r: redis::RedisResult<bool> = c.expire("lock:a", 5);
        if r.is_err() { let _: () = c.del("lock:a").unwrap(); }
    }
}
#[cfg(test)]
mod tests {
    #[test]
    fn t() { let _: () = c.del("lock:a").unwrap(); }
}
#[tokio::test]
async fn t2() { let _: () = c.del("lock:a").unwrap(); }
"#,
    );
    let d: Vec<(u32, u32)> = f.ops.iter().map(|o| (o.depth(), o.order)).collect();
    assert_eq!(d[..3], [(0, 0), (1, 1), (2, 2)]);
    let tests: Vec<bool> = f
        .ops
        .iter()
        .map(|o| f.scopes[o.scope as usize].is_test)
        .collect();
    assert_eq!(tests, vec![false, false, false, true, true]);
    assert_eq!(
        f.scopes[f.ops[3].scope as usize].owner.as_deref(),
        Some("tests")
    );
}

#[test]
fn unparsable_file_falls_back_per_item() {
    let src = r#"//! Module docs.
#![allow(dead_code)]
use redis::Commands;
fn broken( { this is not rust
}
impl Locker {
    fn ok(&self, c: &mut redis::Connection) { let _: () = c.del("lock:x").unwrap(); }
    fn bad(&self) { let = ; }
}
fn fine(c: &mut redis::Connection) { let _: bool = c.set_nx("lock:x", 1).unwrap(); }
"#;
    let f = extract(src);
    assert!(
        f.notes.iter().any(|n| n.contains("syn could not parse")),
        "{:?}",
        f.notes
    );
    let got: Vec<_> = f.ops.iter().map(|o| o.kind.clone()).collect();
    assert_eq!(
        got,
        vec![
            OpKind::Release { checked: false },
            OpKind::Acquire { expiry: false }
        ]
    );
    let del = &f.ops[0];
    assert_eq!(&src[del.name_span.range()], "del");
    assert_eq!(
        &src[del.name_span.start()..del.span.end()],
        "del(\"lock:x\")"
    );
    let acq = &f.ops[1];
    assert_eq!(
        &src[acq.name_span.start()..acq.span.end()],
        "set_nx(\"lock:x\", 1)"
    );
    assert_eq!(
        f.scopes[del.scope as usize].owner.as_deref(),
        Some("Locker")
    );
}

#[test]
fn pathological_inputs_do_not_panic() {
    let deep = format!(
        "fn f() {{ c.del({}1{}) }}",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let f = extract(&deep);
    assert!(!f.notes.is_empty());
    let long_chain = format!("fn f() {{ redis{} ; }}", ".a()".repeat(20000));
    let _ = extract(&long_chain);
    let sum = format!("fn f() {{ let _ = redis{}; }}", " + 1".repeat(50000));
    let _ = extract(&sum);
    for s in [
        "",
        "\u{feff}#!/usr/bin/env run\nfn main() { redis::cmd(\"DEL\").arg(\"lock:z\"); }",
        "fn f() { \"unterminated",
        "r#\"",
        "'",
        "fn é() { c.del(\"lock:é\"); }",
        "fn f() { format!(\"{\", x); c.del(format!(\"{}\")); }",
    ] {
        let _ = extract(s);
    }
    let f = extract("\u{feff}#!/usr/bin/env run\nfn main() { let _: () = redis::cmd(\"DEL\").arg(\"lock:z\").query(c).unwrap(); }");
    assert_eq!(f.ops.len(), 1);
}

#[test]
fn timing() {
    let Ok(list) = std::env::var("LL_TIME") else {
        return;
    };
    let files: Vec<String> = std::fs::read_to_string(list)
        .unwrap()
        .lines()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    let t = std::time::Instant::now();
    for f in &files {
        let _ = syn::parse_file(f);
    }
    eprintln!("syn only: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    for f in &files {
        let _ = extract(f);
    }
    eprintln!("extract: {:?}", t.elapsed());
}

#[test]
fn lazy_static_and_once_cell_scripts() {
    let src = r##"use redis;
lazy_static! {
    pub static ref UNLOCK: redis::Script = redis::Script::new("return redis.call('del', KEYS[1])");
    static ref OTHER: u32 = 1;
}
static EXTEND: once_cell::sync::Lazy<redis::Script> = once_cell::sync::Lazy::new(|| {
    redis::Script::new(r#"return redis.call("pexpire", KEYS[1], ARGV[1])"#)
});
async fn release(c: &mut C, lock_key: &str) { let _: i32 = UNLOCK.key(lock_key).invoke_async(c).await.unwrap(); }
async fn extend(c: &mut C, lock_key: &str) { let _: i32 = EXTEND.key(lock_key).arg(5).invoke_async(c).await.unwrap(); }
"##;
    let f = extract(src);
    let names: Vec<_> = f.scripts.iter().map(|s| s.name.clone()).collect();
    assert_eq!(
        names,
        vec![Some("UNLOCK".to_string()), Some("EXTEND".to_string())]
    );
    let got: Vec<_> = f.ops.iter().map(|o| o.kind.clone()).collect();
    assert_eq!(
        got,
        vec![
            OpKind::Eval { script: Some(0) },
            OpKind::Eval { script: Some(1) }
        ]
    );
    let s = &f.scripts[0];
    assert!(src[s.to_source(7)..].starts_with("redis.call"));
}

#[test]
fn commands_and_options_built_over_several_statements() {
    let k = kinds(
        r#"use redis::{Commands, SetOptions, ExistenceCheck, SetExpiry};
fn a(c: &mut redis::Connection, k: &str, t: &str, ttl: Option<u64>) {
    let mut cmd = redis::cmd("SET");
    cmd.arg(k).arg(t).arg("NX");
    if let Some(ms) = ttl {
        cmd.arg("PX").arg(ms);
    }
    let _: Option<String> = cmd.query(c).unwrap();
    let del = redis::Cmd::new().arg("DEL").arg("lock:z").to_owned();
    let _: () = del.query(c).unwrap();
}
fn b(c: &mut redis::Connection, t: &str, ttl: u64) {
    let mut opts = SetOptions::default().conditional_set(ExistenceCheck::NX);
    if ttl > 0 {
        opts = opts.with_expiration(SetExpiry::PX(ttl));
    }
    let _: bool = c.set_options("lock:y", t, opts).unwrap();
}"#,
    );
    assert_eq!(
        k,
        vec![
            (OpKind::Acquire { expiry: true }, "{k}".to_string()),
            (OpKind::Release { checked: false }, "lock:z".to_string()),
            (OpKind::Acquire { expiry: true }, "lock:y".to_string()),
        ]
    );
}

#[test]
fn fred_scripts_custom_eval_and_static_cmd() {
    let f = extract(
        r#"use fred::prelude::*;
use fred::types::Script;
const RELEASE_LOCK: &str = "return redis.call('del', KEYS[1])";
async fn a(c: &Client, id: u64) {
    let script = Script::from_lua(RELEASE_LOCK);
    let _: i64 = script.evalsha_with_reload(c, vec![format!("lock:{id}")], vec!["t"]).await.unwrap();
    let _: i64 = c.custom(CustomCommand::new_static("EVAL", ClusterHash::FirstKey, false), vec![RELEASE_LOCK.to_string(), "1".into(), format!("lock:{id}")]).await.unwrap();
}"#,
    );
    let got: Vec<_> = f
        .ops
        .iter()
        .map(|o| (o.kind.clone(), o.key.display(), o.client))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                OpKind::Eval { script: Some(0) },
                "lock:{id}".into(),
                Client::Fred
            ),
            (
                OpKind::Eval { script: Some(0) },
                "lock:{id}".into(),
                Client::Fred
            ),
        ]
    );
    assert_eq!(f.scripts[0].name.as_deref(), Some("RELEASE_LOCK"));

    let k = kinds(
        r#"fn a(c: &mut redis::Connection) {
    let _: bool = redis::Cmd::set_nx("lock:s", 1).query(c).unwrap();
    let _: () = redis::Cmd::del("lock:s").query(c).unwrap();
    let _: () = redis::cmd("DELEX").arg("lock:s").arg("IFEQ").arg("t").query(c).unwrap();
    let _: () = redis::cmd("EVALSHA").arg("abc").arg(1).arg("lock:s").arg("t").query(c).unwrap();
    let _: () = redis::cmd("FCALL").arg("release").arg(0).query(c).unwrap();
}"#,
    );
    assert_eq!(
        k,
        vec![
            (OpKind::Acquire { expiry: false }, "lock:s".into()),
            (OpKind::Release { checked: false }, "lock:s".into()),
            (OpKind::Release { checked: true }, "lock:s".into()),
            (OpKind::Eval { script: None }, "lock:s".into()),
        ]
    );
}

#[test]
fn watch_and_helper_values() {
    let f = extract(
        r#"use redis::Commands;
fn new_token() -> String { uuid::Uuid::new_v4().to_string() }
fn stamp() -> u128 { std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() }
fn a(c: &mut redis::Connection, t: &str) {
    let _: bool = c.set_nx("lock:a", new_token()).unwrap();
    let _: bool = c.set_nx("lock:b", stamp()).unwrap();
    let _: () = redis::cmd("WATCH").arg("lock:a").query(c).unwrap();
    let v: Option<String> = c.get("lock:a").unwrap();
    let _: () = redis::pipe().atomic().del("lock:a").query(c).unwrap();
}"#,
    );
    let got: Vec<_> = f
        .ops
        .iter()
        .map(|o| (o.value().cloned(), o.watched()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(ValueExpr::Unique), false),
            (Some(ValueExpr::Weak("the current time".into())), false),
            (None, true),
            (None, true),
        ]
    );
}

#[test]
fn script_invocation_built_in_steps() {
    let f = extract(
        r#"use redis::Script;
const RELEASE: &str = "return redis.call('del', KEYS[1])";
async fn a(c: &mut C, lock_key: &str, t: &str) {
    let script = Script::new(RELEASE);
    let mut inv = script.prepare_invoke();
    inv.key(lock_key).arg(t);
    let _: i32 = inv.invoke_async(c).await.unwrap();
}"#,
    );
    let got: Vec<_> = f
        .ops
        .iter()
        .map(|o| (o.kind.clone(), o.key.display()))
        .collect();
    assert_eq!(
        got,
        vec![(OpKind::Eval { script: Some(0) }, "{lock_key}".to_string())]
    );
}

#[test]
fn byte_offsets_survive_multibyte_text() {
    let src = "// héllo wörld — ünïcode ✓\nuse redis::Commands;\nfn f(c: &mut redis::Connection) { let s = \"ümlaut→\"; let _: () = c.del(format!(\"lock:{s}\")).unwrap(); println!(\"{}\", vec![c.del::<_, ()>(\"lock:ß\").is_ok()][0]); }\n";
    let f = extract(src);
    assert_eq!(f.ops.len(), 2);
    for o in &f.ops {
        assert_eq!(src.get(o.name_span.range()), Some("del"));
    }
    let script = "const R: &str = \"--ü\\n\\u{e9}redis.call('del', KEYS[1])\";\nfn g(c: &mut C, lock_key: &str) { let _: i32 = redis::Script::new(R).key(lock_key).invoke(c).unwrap(); }\n";
    let f = extract(script);
    let s = &f.scripts[0];
    let at = s.text.find("redis.call").unwrap();
    assert!(script[s.to_source(at)..].starts_with("redis.call"));
}

/// `LL_FUZZ=list.txt`: extracts truncated and spliced versions of each listed file.
#[test]
fn fuzz_truncations() {
    let Ok(list) = std::env::var("LL_FUZZ") else {
        return;
    };
    let mut n = 0;
    for p in std::fs::read_to_string(list).unwrap().lines() {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let text = format!("use redis::Commands;\n{text}");
        for frac in [3usize, 2, 5] {
            let mut cut = text.len() * (frac - 1) / frac;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let _ = extract(&text[..cut]);
            let _ = extract(&format!(
                "{}}}}} fn x() {{ c.del(\"lock:a\"); {}",
                &text[..cut / 2],
                &text[cut..]
            ));
            n += 1;
        }
    }
    eprintln!("fuzzed {n} variants");
}

#[test]
fn literal_decoding_and_set_flags() {
    use super::syntax::{decode_literal, SetFlags};
    let (t, a) = decode_literal(
        r#""a\nb\"c\u{e9}d\
        e""#,
        100,
    )
    .unwrap();
    assert_eq!(t, "a\nb\"c\u{e9}de");
    // `d` follows the \u{e9} escape: source 100 + 1 + 13.
    let sf = ScriptFact {
        name: None,
        text: t.clone(),
        anchors: a,
        lua: LuaFacts::default(),
        client: Client::RedisRs,
    };
    assert_eq!(sf.to_source(t.find('d').unwrap()), 100 + 1 + 13);
    let (t, a) = decode_literal("r##\"x\"#y\"##", 5).unwrap();
    assert_eq!(t, "x\"#y");
    assert_eq!(a, vec![(0, 5 + 4)]);
    assert!(decode_literal("b\"x\"", 0).is_none());

    let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert_eq!(
        SetFlags::from_words(&w("NX PX 100")).kind(),
        OpKind::Acquire { expiry: true }
    );
    assert_eq!(
        SetFlags::from_words(&w("PX 0 NX")).kind(),
        OpKind::Acquire { expiry: false }
    );
    assert_eq!(SetFlags::from_words(&w("XX EX 5")).kind(), OpKind::Expire);
    assert_eq!(
        SetFlags::from_words(&w("IFEQ t PX 5")).kind(),
        OpKind::CheckedExtend
    );
    assert_eq!(
        SetFlags::from_words(&w("EX 5")).kind(),
        OpKind::Set { expiry: true }
    );
    assert_eq!(
        SetFlags::from_words(&w("GET")).kind(),
        OpKind::Set { expiry: false }
    );
}

#[test]
fn raw_set_with_set_options_argument() {
    let k = kinds(
        r#"use redis::{SetOptions, ExistenceCheck, SetExpiry};
fn a(c: &mut redis::Connection, t: &str) {
    let opts = SetOptions::default().conditional_set(ExistenceCheck::NX).with_expiration(SetExpiry::PX(5));
    let _: Option<String> = redis::cmd("SET").arg("lock:o").arg(t).arg(opts).query(c).unwrap();
    let _: Option<String> = redis::cmd("SET").arg("lock:p").arg(t).arg(&t).query(c).unwrap();
}"#,
    );
    assert_eq!(
        k,
        vec![
            (OpKind::Acquire { expiry: true }, "lock:o".to_string()),
            (OpKind::Set { expiry: false }, "lock:p".to_string()),
        ]
    );
}

#[test]
fn fully_qualified_trait_calls() {
    let k = kinds(
        r#"use redis::{AsyncCommands, Commands};
async fn a(c: &mut C) {
    let _: bool = AsyncCommands::set_nx(c, "lock:q", 1).await.unwrap();
    let _: () = redis::Commands::del(c, "lock:q").unwrap();
}"#,
    );
    assert_eq!(
        k,
        vec![
            (OpKind::Acquire { expiry: false }, "lock:q".to_string()),
            (OpKind::Release { checked: false }, "lock:q".to_string()),
        ]
    );
}

/// A macro body of more than 16 kB is read part by part
/// (`syntax::for_each_macro_expr`): the ops of its expressions are found
/// as in a small one, at their places.
#[test]
fn a_large_macro_body_is_read_part_by_part() {
    let body = |n: usize| {
        let mut src = String::from(
            "use redis::Commands;\n\nfn clear(con: &mut redis::Connection) {\n    run! {\n",
        );
        for i in 0..n {
            src.push_str(&format!("        con.del(\"lock:{i}\");\n"));
        }
        src.push_str("    }\n}\n");
        src
    };
    for n in [10, 1000] {
        let src = body(n);
        assert_eq!(src.len() > 16 << 10, n == 1000);
        let ops = ops(&src);
        assert_eq!(ops.len(), n);
        assert!(ops.iter().all(|o| &src[o.name_span.range()] == "del"));
        assert_eq!(ops[n - 1].key.display(), format!("lock:{}", n - 1));
    }
}

/// What the walk looks up in other items (a constant, a static, a
/// `lazy_static!` entry, a one-expression helper, a struct field made with
/// `Script::new`) is parsed again from where its text stands: read item by
/// item (every piece's spans let go before the next), the keys, values and
/// scripts resolve as in the whole parse.
#[test]
fn other_items_expressions_resolve_when_read_item_by_item() {
    let src = r#"use redis::{Commands, Script};

const PREFIX: &str = "lock:";
static HOLDER: &str = "holder-1";
lazy_static! {
    static ref FENCE: String = format!("{}fence", PREFIX);
}
const UNLOCK: &str = r"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

fn order_key(id: u64) -> String {
    format!("{}order:{}", PREFIX, id)
}

struct Locks {
    unlock: Script,
}

impl Locks {
    fn new() -> Self {
        Locks {
            unlock: Script::new(UNLOCK),
        }
    }

    fn take(&self, con: &mut redis::Connection, id: u64) -> redis::RedisResult<()> {
        let _: bool = con.set_nx(order_key(id), HOLDER)?;
        let _: bool = con.set_nx(FENCE.as_str(), HOLDER)?;
        let _: i32 = self.unlock.key(order_key(id)).arg(HOLDER).invoke(con)?;
        Ok(())
    }
}
"#;
    let whole = super::extract_with(src, super::MAX_NESTING, usize::MAX);
    let by_items = super::extract_with(src, super::MAX_NESTING, 0);
    assert_eq!(by_items, whole);
    let keys: Vec<String> = whole.ops.iter().map(|o| o.key.display()).collect();
    assert!(keys.iter().any(|k| k == "lock:order:{id}"), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains("fence")), "{keys:?}");
    assert!(
        whole
            .ops
            .iter()
            .any(|o| matches!(o.value(), Some(ValueExpr::Constant(v)) if v.contains("holder-1"))),
        "{:?}",
        whole.ops
    );
    assert!(
        whole
            .ops
            .iter()
            .any(|o| matches!(o.kind, OpKind::Eval { script: Some(_) })),
        "{:?}",
        whole.ops
    );
}

/// Every Rust file under `LL_RUST_TREE` (real code, fetched outside the
/// repository) read by pieces, of 0 bytes (every item, fn and block-like
/// statement cut) and as a run reads it, gives the facts of its whole
/// parse; prints the files that do not. Run by hand:
/// `LL_RUST_TREE=DIR cargo test --release --lib pieces_on_a_tree -- --ignored --nocapture`.
#[test]
#[ignore]
fn pieces_on_a_tree_give_the_facts_of_the_whole() {
    let Ok(root) = std::env::var("LL_RUST_TREE") else {
        return;
    };
    let files = rust_files_under(std::path::Path::new(&root));
    let min: usize = std::env::var("LL_MIN_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let (mut same, mut differ) = (0, 0);
    for path in &files {
        let Ok(src) = std::fs::read_to_string(path) else {
            continue;
        };
        if src.len() < min {
            continue;
        }
        let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
        let pieces = super::extract_with(&src, super::MAX_NESTING, 0);
        // (and as a run reads it: pieces of `PIECE_BYTES` past 16 kB)
        if pieces == whole && extract(&src) == whole {
            same += 1;
        } else {
            differ += 1;
            println!("DIFFER {}", path.display());
        }
    }
    println!("same {same} differ {differ}");
}

/// `matches!` is read for its scrutinee (a turbofish's commas and all);
/// its pattern, which calls nothing, is not read as an expression.
#[test]
fn matches_reads_its_scrutinee_only() {
    let src = r#"use redis::Commands;
fn held(con: &mut redis::Connection) -> bool {
    matches!(con.get::<_, Option<String>>("lock:held"), Ok(Some(_)))
}
fn kind(k: &Kind) -> bool {
    matches!(k, Kind::A(x) | Kind::B(make_lock(x)))
}
"#;
    assert_eq!(
        kinds(src),
        vec![(OpKind::Get, "lock:held".to_string())],
        "{:?}",
        ops(src)
    );
    let f = extract(src);
    let callees: Vec<String> = f.link.calls.iter().map(|c| c.callee.to_string()).collect();
    assert!(
        !callees.iter().any(|c| c == "make_lock" || c == "B"),
        "{callees:?}"
    );
}

/// A builder chain statement larger than a piece, of one method called
/// again and again on a plain head (`router = router.route(…)…;`, `let
/// app = App::new().service(…)…;`), is read by parts between its calls,
/// with the facts of the whole parse (call sites with their spans and
/// receivers, ops in the calls' arguments); a chain of a method the
/// front-end reads (`arg`), of two methods, or that goes on after its
/// calls (`?`) is not cut.
#[test]
fn a_long_builder_chain_is_read_part_by_part() {
    let routes: String = (0..60)
        .map(|i| {
            format!(
                "        .route(\"/r{i}\", get(h{i}).post(lock_route(con, \"lock:r{i}\")))\n        \
                 // between calls. and: a comment\n"
            )
        })
        .collect();
    let services: String = (0..60)
        .map(|i| {
            format!("        .service(web::resource(\"/s{i}\").to(|| con.del(\"lock:s{i}\")))\n")
        })
        .collect();
    let args: String = (0..60)
        .map(|i| format!("        .arg(\"v{i}\")\n"))
        .collect();
    let mixed: String = (0..60)
        .map(|i| format!("        .route(\"/m{i}\", get(m{i}))\n        .layer(l{i})\n"))
        .collect();
    let src = format!(
        "use redis::Commands;\n\
         fn lock_route(con: &mut redis::Connection, key: &str) -> bool {{\n    \
         con.set_nx(key, 1).unwrap_or(false)\n}}\n\n\
         pub fn routes(con: &mut redis::Connection) -> redis::RedisResult<Router> {{\n    \
         let mut router = Router::new();\n    \
         router = router\n{routes}    ;\n    \
         let app = App::new()\n{services}    ;\n    \
         let mut c = redis::cmd(\"SET\");\n    c.arg(\"lock:raw\");\n    \
         let built = c\n{args}    ;\n    \
         built.query::<()>(con)?;\n    \
         let both = router\n{mixed}    ;\n    \
         let tried = router\n{routes}    .into_service()?;\n    \
         Ok(router)\n}}\n"
    );
    let text = super::scan::blank_bom_and_shebang(&src);
    let items = super::scan::top_level_items(&text);
    let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
    assert!(whole.link.calls.len() >= 240, "{}", whole.link.calls.len());
    assert!(whole.ops.len() > 60, "{}", whole.ops.len());
    let list = super::visitor::piece_list(&text, &items, 512);
    let cut_at = |stmt: &str| {
        let at = text.find(stmt).expect("in the source");
        list.iter()
            .any(|p| p.contains(&format!("[{at}*")) || p.contains(&format!(" {at}*")))
    };
    assert!(cut_at("router = router\n") && cut_at("let app"), "{list:?}");
    assert!(
        !cut_at("let built") && !cut_at("let both") && !cut_at("let tried"),
        "{list:?}"
    );
    // (the call sites of one statement are listed in the order the walk
    // meets them: a whole chain's calls, then their arguments' calls; a
    // part's calls, then theirs. Each is the same site, with the same
    // order among the ops: compared in source order.)
    let in_source_order = |f: &FileFacts| {
        let mut f = f.clone();
        f.link
            .calls
            .sort_by_key(|c| (c.name_span.start(), c.span.start()));
        f
    };
    let whole = in_source_order(&whole);
    for piece_bytes in [512, 256, 64] {
        let f = by_pieces(&text, &items, piece_bytes).expect("read by pieces");
        assert_eq!(in_source_order(&f), whole, "pieces of {piece_bytes}");
    }
}

/// A `const` or `static` table larger than a piece (`&[…]` or `[…]`, in
/// a module or an impl too) is read by runs of its elements, each piece
/// the item with some of them: the scripts among its strings and the
/// ops of the file are those of the whole parse, and so is what the
/// file's constants resolve to. A repeat array (`[[0, …]; n]`) is not cut.
#[test]
fn a_large_table_is_read_part_by_part() {
    let lua = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    let scripts: String = (0..40)
        .map(|i| format!("    \"{lua} -- {i}\",\n    \"plain text {i}\",\n"))
        .collect();
    let rows: String = (0..200)
        .map(|i| format!("    ({i}, \"lock:t{i}\"),\n"))
        .collect();
    let names: String = (0..100)
        .map(|i| format!("        \"lock:n{i}\",\n"))
        .collect();
    let zeros = "0, ".repeat(399);
    let src = format!(
        "use redis::Commands;\n\n\
         /// The release scripts.\n#[allow(dead_code)]\n\
         pub(crate) const SCRIPTS: &[&str] = &[\n{scripts}];\n\n\
         pub static TABLE: [(u32, &str); 200] = [\n{rows}];\n\n\
         const ZEROS: [[u8; 400]; 4] = [[{zeros}0]; 4];\n\n\
         const LOCK_KEY: &str = \"lock:main\";\n\n\
         struct Locks;\n\
         impl Locks {{\n    pub const NAMES: &'static [&'static str] = &[\n{names}    ];\n}}\n\n\
         fn take(con: &mut redis::Connection) -> redis::RedisResult<()> {{\n    \
         let _: bool = con.set_nx(LOCK_KEY, 1)?;\n    \
         let _: () = con.del(TABLE[3].1)?;\n    \
         for k in SCRIPTS {{ let _: () = con.del(*k)?; }}\n    \
         let _: () = con.del(SCRIPTS)?;\n    let _: bool = con.set_nx(TABLE, 1)?;\n    \
         let _: () = redis::Script::new(SCRIPTS).key(\"lock:s\").invoke(con)?;\n    \
         Ok(())\n}}\n"
    );
    let text = super::scan::blank_bom_and_shebang(&src);
    let items = super::scan::top_level_items(&text);
    let whole = super::extract_with(&src, super::MAX_NESTING, usize::MAX);
    assert!(whole.scripts.len() >= 40, "{}", whole.scripts.len());
    assert!(whole.ops.len() >= 3, "{:?}", whole.ops);
    let list = super::visitor::piece_list(&text, &items, 512);
    // (how many pieces stand under a header that opens with `item`)
    let cut_at = |item: &str| {
        let under = |p: &&String| {
            let heads = p.split('[').nth(1).and_then(|h| h.split(']').next());
            heads.is_some_and(|h| {
                h.split(' ')
                    .filter_map(|n| n.parse::<usize>().ok())
                    .any(|at| {
                        text.get(at..)
                            .is_some_and(|t| t.trim_start().starts_with(item))
                    })
            })
        };
        list.iter().filter(under).count() > 1
    };
    assert!(
        cut_at("/// The release scripts") && cut_at("pub static TABLE"),
        "{list:?}"
    );
    assert!(cut_at("pub const NAMES"), "{list:?}");
    assert!(!cut_at("const ZEROS"), "{list:?}");
    let consts = super::visitor::consts_found(&text, &items, usize::MAX);
    assert_eq!(consts.len(), 5, "{consts:?}");
    for piece_bytes in [512, 256, 64] {
        let f = by_pieces(&text, &items, piece_bytes).expect("read by pieces");
        assert_eq!(f, whole, "pieces of {piece_bytes}");
        // (each constant's value where the whole parse finds it)
        let found = super::visitor::consts_found(&text, &items, piece_bytes);
        assert_eq!(found, consts, "pieces of {piece_bytes}");
    }
}
