//! Pure syntax helpers of the Rust front-end: stripping conversions,
//! method-call chains, macro bodies, SET option words, string literal
//! decoding with source anchors, "truthy" fail-open values, test attributes.

use crate::facts::OpKind;
use crate::words;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Expr, Lit, Pat};

/// The `static ref NAME: T = expr;` items of a `lazy_static!` body.
pub(super) fn lazy_statics(tokens: &TokenStream) -> Vec<(String, Expr)> {
    let mut out = Vec::new();
    let mut cur: Vec<TokenTree> = Vec::new();
    let flush = |cur: &mut Vec<TokenTree>, out: &mut Vec<(String, Expr)>| {
        let toks = std::mem::take(cur);
        let eq = toks
            .iter()
            .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '=' && p.spacing() == proc_macro2::Spacing::Alone));
        let Some(eq) = eq else { return };
        let name = toks[..eq]
            .iter()
            .skip_while(|t| !matches!(t, TokenTree::Ident(i) if i == "ref"))
            .nth(1);
        let Some(TokenTree::Ident(name)) = name else {
            return;
        };
        let rest: TokenStream = toks[eq + 1..].iter().cloned().collect();
        if let Ok(e) = syn::parse2::<Expr>(rest) {
            out.push((name.to_string(), e));
        }
    };
    for tt in tokens.clone() {
        if matches!(&tt, TokenTree::Punct(p) if p.as_char() == ';') {
            flush(&mut cur, &mut out);
        } else {
            cur.push(tt);
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// The argument of a `Script::new(x)` / `Script::from_lua(x)` inside `e`
/// (through `Arc::new`, `Lazy::new(|| …)`, references and parentheses).
pub(super) fn find_script_new(e: &Expr) -> Option<&Expr> {
    find_script_new_d(e, 0)
}

pub(super) fn find_script_new_d(e: &Expr, d: u32) -> Option<&Expr> {
    if d > 8 {
        return None;
    }
    match e {
        Expr::Call(c) => {
            if let Expr::Path(p) = &*c.func {
                let segs: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                let n = segs.len();
                if n >= 2
                    && segs[n - 2] == "Script"
                    && matches!(segs[n - 1].as_str(), "new" | "from_lua")
                {
                    return c.args.first();
                }
            }
            c.args.iter().find_map(|a| find_script_new_d(a, d + 1))
        }
        Expr::MethodCall(m) => find_script_new_d(&m.receiver, d + 1),
        Expr::Closure(c) => find_script_new_d(&c.body, d + 1),
        Expr::Paren(p) => find_script_new_d(&p.expr, d + 1),
        Expr::Reference(r) => find_script_new_d(&r.expr, d + 1),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => find_script_new_d(e, d + 1),
            _ => None,
        },
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Small syntax helpers
// ---------------------------------------------------------------------------

pub(super) fn pat_name(p: &Pat) -> Option<String> {
    match p {
        Pat::Ident(i) => Some(i.ident.to_string()),
        Pat::Type(t) => pat_name(&t.pat),
        Pat::Reference(r) => pat_name(&r.pat),
        _ => None,
    }
}

pub(super) fn path_idents(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The path of a call's function, as identifiers.
pub(super) fn call_path(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) => Some(path_idents(&p.path)),
            _ => None,
        },
        _ => None,
    }
}

/// Methods that only convert or borrow a value: stripped around keys and values.
pub(super) const WRAPPERS: &[&str] = &[
    "as_str",
    "to_string",
    "to_owned",
    "clone",
    "as_ref",
    "into",
    "as_bytes",
    "borrow",
    "as_slice",
    "deref",
    "as_deref",
    "to_vec",
];

/// Removes `&`, `*`, parentheses, `.await`, `?` and conversion wrappers.
pub(super) fn strip(mut e: &Expr) -> &Expr {
    for _ in 0..64 {
        e = match e {
            Expr::Reference(r) => &r.expr,
            Expr::Paren(p) => &p.expr,
            Expr::Group(g) => &g.expr,
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &u.expr,
            Expr::MethodCall(m)
                if m.args.is_empty() && WRAPPERS.contains(&m.method.to_string().as_str()) =>
            {
                &m.receiver
            }
            Expr::Call(c)
                if c.args.len() == 1
                    && call_path(e).is_some_and(|p| {
                        p.len() >= 2
                            && matches!(p[p.len() - 2].as_str(), "String" | "Into" | "From")
                            && matches!(p[p.len() - 1].as_str(), "from" | "into" | "new")
                    }) =>
            {
                &c.args[0]
            }
            _ => return e,
        };
    }
    e
}

/// Splits a macro body at top-level `,`, `;` and `=>`.
pub(super) fn split_tokens(tokens: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    split_tokens_each(tokens, |t| out.push(t));
    out
}

/// [`split_tokens`], each part handed to `f` as it is cut.
fn split_tokens_each(tokens: TokenStream, mut f: impl FnMut(TokenStream)) {
    let mut cur: Vec<TokenTree> = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        if let TokenTree::Punct(p) = &tt {
            let ch = p.as_char();
            if ch == ',' || ch == ';' {
                f(cur.drain(..).collect());
                continue;
            }
            if ch == '=' && p.spacing() == proc_macro2::Spacing::Joint {
                if let Some(TokenTree::Punct(n)) = iter.peek() {
                    if n.as_char() == '>' {
                        iter.next();
                        f(cur.drain(..).collect());
                        continue;
                    }
                }
            }
        }
        cur.push(tt);
    }
    if !cur.is_empty() {
        f(cur.into_iter().collect());
    }
}

/// A macro body of more bytes than this is read part by part
/// ([`for_each_macro_expr`]).
pub(super) const WHOLE_MACRO_BYTES: usize = 16 << 10;

/// The expressions of [`macro_exprs`] handed to `f` one at a time. A body
/// larger than [`WHOLE_MACRO_BYTES`] is not parsed as one expression list
/// first but part by part, each part's expression dropped after `f`:
/// redis-rs's `implement_commands!` (150 kB of methods) built a 1.3 MB
/// token buffer only to fail as a list, then held every part's expression
/// at once. (Such a body that is a list with a comma outside brackets in
/// one of its expressions, a closure's `|a, b|` or a turbofish's
/// `::<A, B>`, loses that expression, as one failing as a list does.)
pub(super) fn for_each_macro_expr(m: &syn::Macro, f: impl FnMut(&Expr)) {
    if m.delimiter.span().join().byte_range().len() <= WHOLE_MACRO_BYTES {
        let mut f = f;
        for e in macro_exprs(&m.tokens) {
            f(&e);
        }
        return;
    }
    for_each_macro_part(m, f);
}

/// The expressions of a macro body cut at each `,`, `;` and `=>` outside
/// brackets, handed to `f` one at a time: how [`for_each_macro_expr`]
/// reads a large body, and how the walker reads each part of one read by
/// pieces (`visitor::macro_parts`).
pub(super) fn for_each_macro_part(m: &syn::Macro, mut f: impl FnMut(&Expr)) {
    split_tokens_each(m.tokens.clone(), |t| {
        if !t.is_empty() {
            if let Ok(e) = syn::parse2::<Expr>(t) {
                f(&e);
            }
        }
    });
}

/// The comma-separated expressions of a macro body: parsed as a whole when
/// it is an expression list (turbofish commas included), else chunk by chunk.
pub(super) fn macro_exprs(tokens: &TokenStream) -> Vec<Expr> {
    use syn::parse::Parser;
    let whole = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated
        .parse2(tokens.clone());
    if let Ok(list) = whole {
        return list.into_iter().collect();
    }
    split_tokens(tokens.clone())
        .into_iter()
        .filter(|t| !t.is_empty())
        .filter_map(|t| syn::parse2::<Expr>(t).ok())
        .collect()
}

pub(super) fn macro_name(m: &syn::Macro) -> String {
    m.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

/// All identifiers and string literal values of a token stream (for option words).
pub(super) fn token_words(ts: TokenStream, out: &mut Vec<String>, budget: &mut u32) {
    for tt in ts {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        match tt {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) => token_words(g.stream(), out, budget),
            TokenTree::Literal(l) => {
                let s = l.to_string();
                out.push(s.trim_matches('"').to_string());
            }
            TokenTree::Punct(_) => {}
        }
    }
}

/// Flags of SET options in any spelling: `NX`, `ExistenceCheck::NX`,
/// `SetCondition::NX`, `SetExpiry::PX(ms)`, `SetExpiration::Px(ms)`,
/// `Expiration::EX(s)`, `"nx"`, `"PX"`.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
pub(super) struct SetFlags {
    pub(super) nx: bool,
    pub(super) xx: bool,
    pub(super) expiry: bool,
    pub(super) ifeq: bool,
}

impl SetFlags {
    pub(super) fn from_words(words: &[String]) -> SetFlags {
        let mut f = SetFlags::default();
        for (i, w) in words.iter().enumerate() {
            match w.as_str() {
                "NX" | "Nx" | "nx" => f.nx = true,
                "XX" | "Xx" | "xx" => f.xx = true,
                "PX" | "EX" | "PXAT" | "EXAT" | "Px" | "Ex" | "Pxat" | "Exat" | "px" | "ex" | "pxat"
                | "exat"
                    // `PX(0)` is no expiry.
                    if words.get(i + 1).map(String::as_str) != Some("0") =>
                {
                    f.expiry = true;
                }
                "IFEQ" | "IfEq" | "ifeq" | "IFDEQ" => f.ifeq = true,
                _ => {}
            }
        }
        f
    }

    /// The op a SET with these flags performs.
    pub(super) fn kind(self) -> OpKind {
        if self.ifeq && self.expiry {
            OpKind::CheckedExtend
        } else if self.nx {
            OpKind::Acquire {
                expiry: self.expiry,
            }
        } else if self.xx && self.expiry {
            OpKind::Expire
        } else {
            OpKind::Set {
                expiry: self.expiry && !self.xx && !self.ifeq,
            }
        }
    }
}

/// Decodes a string literal's source text into its value, with anchors
/// `(text offset, source offset)` at every point where the two drift apart.
pub(super) fn decode_literal(raw: &str, start: usize) -> Option<(String, Vec<(usize, usize)>)> {
    let bytes = raw.as_bytes();
    if raw.starts_with('r') {
        let hashes = bytes[1..].iter().take_while(|&&b| b == b'#').count();
        let open = 1 + hashes + 1;
        let close = raw.len().checked_sub(1 + hashes)?;
        if close < open {
            return None;
        }
        let text = raw.get(open..close)?.to_string();
        return Some((text, vec![(0, start + open)]));
    }
    if !raw.starts_with('"') || raw.len() < 2 {
        return None;
    }
    let body = raw.get(1..raw.len() - 1)?;
    let mut text = String::with_capacity(body.len());
    let mut anchors = vec![(0, start + 1)];
    let mut it = body.char_indices().peekable();
    while let Some((_, c)) = it.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        let Some((_, e)) = it.next() else { break };
        match e {
            'n' => text.push('\n'),
            't' => text.push('\t'),
            'r' => text.push('\r'),
            '0' => text.push('\0'),
            '\\' => text.push('\\'),
            '\'' => text.push('\''),
            '"' => text.push('"'),
            'x' => {
                let mut v = 0u32;
                for _ in 0..2 {
                    if let Some((_, h)) = it.next() {
                        v = v * 16 + h.to_digit(16).unwrap_or(0);
                    }
                }
                text.push(char::from_u32(v).unwrap_or('?'));
            }
            'u' => {
                let mut v = 0u32;
                for (_, h) in it.by_ref() {
                    if h == '}' {
                        break;
                    }
                    if let Some(d) = h.to_digit(16) {
                        v = v.saturating_mul(16).saturating_add(d);
                    }
                }
                text.push(char::from_u32(v).unwrap_or('?'));
            }
            '\n' | '\r' => {
                while let Some(&(_, w)) = it.peek() {
                    if w.is_whitespace() {
                        it.next();
                    } else {
                        break;
                    }
                }
            }
            other => text.push(other),
        }
        let next = it.peek().map(|&(j, _)| j).unwrap_or(body.len());
        anchors.push((text.len(), start + 1 + next));
    }
    Some((text, anchors))
}

/// A value that turns a failed acquire into success: `true`, `Ok(true)`,
/// `Some(guard)`, `Ok(Some(guard))`, a block or closure ending in one, a
/// `return` of one.
pub(super) fn truthy(e: &Expr, d: u32) -> bool {
    if d > 8 {
        return false;
    }
    match e {
        Expr::Lit(l) => matches!(&l.lit, Lit::Bool(b) if b.value),
        Expr::Paren(p) => truthy(&p.expr, d + 1),
        Expr::Return(r) => r.expr.as_deref().is_some_and(|x| truthy(x, d + 1)),
        Expr::Closure(c) => truthy(&c.body, d + 1),
        Expr::Block(b) => block_truthy(&b.block, d + 1),
        Expr::Call(c) => {
            let Some(p) = call_path(e) else { return false };
            match p.last().map(String::as_str) {
                Some("Some") => true,
                Some("Ok") => c.args.first().is_some_and(|a| {
                    truthy(a, d + 1)
                        || matches!(a, Expr::Struct(s) if s.path.segments.last().is_some_and(|l| {
                            let n = l.ident.to_string();
                            words::reads_like_lock(&n) || n.contains("Guard")
                        }))
                }),
                _ => false,
            }
        }
        _ => false,
    }
}

pub(super) fn block_truthy(b: &syn::Block, d: u32) -> bool {
    for s in &b.stmts {
        if let syn::Stmt::Expr(Expr::Return(r), _) = s {
            return r.expr.as_deref().is_some_and(|x| truthy(x, d + 1));
        }
    }
    match b.stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => truthy(e, d + 1),
        _ => false,
    }
}

pub(super) fn is_err_pat(p: &Pat) -> bool {
    match p {
        Pat::TupleStruct(t) => t.path.segments.last().is_some_and(|s| s.ident == "Err"),
        Pat::Or(o) => o.cases.iter().any(is_err_pat),
        _ => false,
    }
}

pub(super) fn has_attr(attrs: &[syn::Attribute], pred: impl Fn(&syn::Attribute) -> bool) -> bool {
    attrs.iter().any(pred)
}

/// `#[test]`, `#[tokio::test]`, `#[rstest]`, `#[cfg(test)]`.
pub(super) fn is_test_attrs(attrs: &[syn::Attribute]) -> bool {
    has_attr(attrs, |a| {
        let path = a.path();
        let last = path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if matches!(
            last.as_str(),
            "test" | "rstest" | "test_case" | "quickcheck"
        ) {
            return true;
        }
        if path.is_ident("cfg") {
            let text = a.meta.to_token_stream().to_string();
            return text.contains("test") && !text.contains("not");
        }
        false
    })
}

pub(super) fn type_name(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

pub(super) struct Link<'e> {
    pub(super) method: &'e syn::Ident,
    pub(super) args: Vec<&'e Expr>,
    /// End of the call's closing parenthesis, relative to the unit until
    /// [`Walker::chain`] adds the unit's base.
    pub(super) end: usize,
}

/// A method-call chain from its base outwards, through `.await` and `?`.
pub(super) fn flatten(top: &Expr) -> (&Expr, Vec<Link<'_>>) {
    let mut links = Vec::new();
    let mut e = top;
    for _ in 0..100_000 {
        e = match e {
            Expr::MethodCall(m) => {
                let r = m.paren_token.span.close().byte_range();
                links.push(Link {
                    method: &m.method,
                    args: m.args.iter().collect(),
                    end: r.end,
                });
                &m.receiver
            }
            Expr::Await(a) => &a.base,
            Expr::Try(t) => &t.expr,
            Expr::Paren(p) => &p.expr,
            _ => break,
        };
    }
    links.reverse();
    (e, links)
}
