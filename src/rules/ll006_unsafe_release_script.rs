use super::{Context, Diagnostic, Diags, Rule, RuleMeta};
use crate::advice;
use crate::facts::{LuaArg, LuaCall, Op, OpKind, ScriptFact, Span};
use crate::finding::Severity;
use crate::words;
use rustc_hash::FxHashMap as HashMap;

/// Flags a Lua release/extend script that deletes or extends `KEYS[i]`
/// without first comparing the stored value with an `ARGV`. See the markdown
/// beside this file.
pub struct UnsafeReleaseScript;

static META: RuleMeta = RuleMeta {
    code: "LL006",
    name: "unsafe-release-script",
    severity: Severity::Error,
    summary: "a Lua release or extend script deletes or extends the lock without comparing its value with the caller's token",
    doc: include_str!("ll006_unsafe_release_script.md"),
};

/// Commands that make a script an acquire script, a counter or a rate
/// limiter: it creates or counts the key in the same run.
const CREATES: &[&str] = &[
    "incr",
    "incrby",
    "incrbyfloat",
    "decr",
    "decrby",
    "hincrby",
    "hincrbyfloat",
    "zadd",
    "sadd",
    "hset",
    "hsetnx",
    "hmset",
    "setnx",
    "lpush",
    "rpush",
    "pfadd",
    "exists",
    "zincrby",
    "xadd",
    "set",
];

fn is_release_or_extend(call: &LuaCall) -> bool {
    match call.command.as_str() {
        "del" | "unlink" | "expire" | "pexpire" | "expireat" | "pexpireat" => true,
        "set" => call.args.iter().any(|a| matches!(a, LuaArg::Literal(s) if matches!(s.to_ascii_lowercase().as_str(), "px" | "ex" | "pxat" | "exat" | "keepttl"))),
        _ => false,
    }
}

/// The script creates or counts the key: `set … nx`, `exists`, `incr`, … —
/// but a `set … xx`/`set … px` that only rewrites the lock is not creation.
fn creates(call: &LuaCall) -> bool {
    // a `set` where the key was found absent: an acquire (or acquire-or-extend) script
    if call.absent && matches!(call.command.as_str(), "set" | "psetex" | "setex") {
        return true;
    }
    if call.command == "set" {
        return call
            .args
            .iter()
            .any(|a| matches!(a, LuaArg::Literal(s) if s.eq_ignore_ascii_case("nx")))
            || !is_release_or_extend(call)
                && !call
                    .args
                    .iter()
                    .any(|a| matches!(a, LuaArg::Literal(s) if s.eq_ignore_ascii_case("xx")));
    }
    CREATES.contains(&call.command.as_str())
}

impl UnsafeReleaseScript {
    /// `runs`: the ops that run each script, by script id.
    fn is_release_context(
        cx: &Context,
        runs: &HashMap<usize, Vec<&Op>>,
        id: usize,
        script: &ScriptFact,
    ) -> bool {
        script
            .name
            .as_deref()
            .is_some_and(words::is_release_or_extend_name)
            || runs.get(&id).into_iter().flatten().any(|o| {
                cx.is_lock_key(o)
                    || cx.key_reads_like_lock(&o.key)
                    || words::is_release_or_extend_name(&cx.facts.scope(o.scope).name)
            })
    }
}

impl Rule for UnsafeReleaseScript {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Diags) {
        if cx.facts.scripts.is_empty() {
            return;
        }
        // the ops that run each script, found in one pass (a walk of the
        // file's ops per script was quadratic in a script file of many EVALs)
        let mut runs: HashMap<usize, Vec<&Op>> = HashMap::default();
        for o in cx.ops() {
            if let OpKind::Eval { script: Some(s) } = o.kind {
                runs.entry(s as usize).or_default().push(o);
            }
        }
        for (id, script) in cx.facts.scripts.iter().enumerate() {
            let calls = &script.lua.calls;
            if calls.iter().any(creates) || !Self::is_release_context(cx, &runs, id, script) {
                continue;
            }
            for call in calls {
                if call.guarded
                    || !is_release_or_extend(call)
                    || !matches!(call.args.first(), Some(LuaArg::Keys(_)))
                {
                    continue;
                }
                let start = script.to_source(call.span.start());
                let end = script.to_source(call.span.end().max(call.span.start()));
                let extend = call.command != "del" && call.command != "unlink";
                out.push(Diagnostic {
                own_flow: false,
                    span: Span::new(start, end.max(start)),
                    message: if extend {
                        format!("this script extends the lock with `{}` without first comparing the stored value with the caller's token (an ARGV): it extends whoever holds the lock now", call.command)
                    } else {
                        format!("this script deletes the lock with `{}` without first comparing the stored value with the caller's token (an ARGV): it releases whoever holds the lock now", call.command)
                    },
                    label: "no ownership check before this call".into(),
                    help: cx.text(&if extend {
                        format!("compare before extending:\n{}", advice::EXTEND_SCRIPT)
                    } else {
                        format!("compare before deleting:\n{}", advice::RELEASE_SCRIPT)
                    }),
                    note: None,
                    labels: Vec::new(),
                });
            }
        }
    }
}
