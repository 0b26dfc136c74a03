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
        let at = text.get(o.name_span.start..o.span.end).unwrap_or("?");
        eprintln!(
            "{:?} key={} val={:?} scope={} depth={} atomic={} watched={} {:?} `{}`",
            o.kind,
            o.key.display(),
            o.value,
            o.scope,
            o.depth,
            o.atomic,
            o.watched,
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
            text.get(fo.span.start..fo.span.end).unwrap_or("?")
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
