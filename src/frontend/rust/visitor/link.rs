//! Phase-one facts for the project link (SPEC §2 "Project summaries") in
//! the Rust front-end: each fn's parameters, the calls of non-client
//! methods and functions with their arguments normalised as keys and
//! values, and which parameter an op writes as its value.

use super::super::syntax::{pat_name, strip};
use super::{Found, Walker};
use crate::facts::{CallArg, CallSite, FnSig, KeyPart, ScopeId, Span, ValueExpr};
use syn::Expr;

/// Most call sites recorded per file.
const MAX_CALL_SITES: usize = 50_000;

impl Walker<'_, '_> {
    /// Records a fn's parameters (not `self`) and makes them current.
    pub(super) fn link_fn(&mut self, id: ScopeId, sig: &syn::Signature) -> Vec<String> {
        let (params, param_types): (Vec<String>, Vec<Option<String>>) = sig
            .inputs
            .iter()
            .filter_map(|i| match i {
                syn::FnArg::Typed(t) => Some((pat_name(&t.pat)?, type_word_of(&t.ty))),
                syn::FnArg::Receiver(_) => None,
            })
            .unzip();
        let sig = FnSig::new(
            id,
            params.iter().map(|p| self.s.call_texts.get(p)).collect(),
            0,
            param_types
                .into_iter()
                .map(|w| w.map(|w| self.s.call_texts.get(&w)))
                .collect(),
        );
        self.facts.link.functions.push(sig);
        std::mem::replace(&mut self.s.params, params)
    }

    /// A bare name argument (`key`, `&key`, `key.clone()`).
    fn bare(&self, e: &Expr) -> Option<String> {
        match strip(e) {
            Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        }
    }

    /// One method of a chain: a call site when the client tables found no
    /// op in it, else the value sources of the ops it performs.
    pub(super) fn link_method(
        &mut self,
        method: &str,
        args: &[&Expr],
        recv: Option<&Expr>,
        span: Span,
        name_span: Span,
        found: &[Found],
    ) {
        if found.is_empty() {
            let recv = recv.map(|r| self.text_of(r));
            self.link_call(method, args, recv, span, name_span);
            return;
        }
        for f in found {
            if f.value != Some(ValueExpr::Unknown) {
                continue;
            }
            let in_key = |n: &str| {
                f.key
                    .parts
                    .iter()
                    .any(|p| matches!(p, KeyPart::Var(v) if **v == *n))
            };
            let key_arg = args
                .iter()
                .position(|a| self.bare(a).is_some_and(|n| in_key(&n)));
            let var = args
                .iter()
                .skip(key_arg.map_or(0, |k| k + 1))
                .filter_map(|a| self.bare(a))
                .find(|n| self.s.params.contains(n) && !in_key(n));
            if let Some(var) = var {
                self.s
                    .value_names
                    .push(&mut self.facts.link, name_span.start(), &var);
            }
        }
    }

    /// A call of a free or associated function (`acquire_lock(&mut c, key)`,
    /// `RedisLock::acquire(..)`) that is not a client call.
    pub(super) fn link_path_call(&mut self, c: &syn::ExprCall) {
        let Expr::Path(p) = &*c.func else { return };
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let Some(name) = segs.last() else { return };
        let recv = (segs.len() >= 2).then(|| segs[..segs.len() - 1].join("::"));
        let args: Vec<&Expr> = c.args.iter().collect();
        let Some(last) = p.path.segments.last() else {
            return;
        };
        let name_span = self.off(last.ident.span());
        let span = Span::new(
            name_span.start(),
            self.span_of(c).end().max(name_span.end()),
        );
        self.link_call(&name.clone(), &args, recv, span, name_span);
    }

    /// The type of an argument where it is plain ([`CallArg::ty`]): a string
    /// literal, a struct literal `T { … }`, `T::new(…)`, or a parameter of
    /// the current fn declared with a text, number or truth type (a named
    /// type may be an alias: `type Key = String`).
    fn arg_type(&self, e: &Expr) -> Option<String> {
        match strip(e) {
            Expr::Lit(l) if matches!(l.lit, syn::Lit::Str(_)) => Some("string".into()),
            Expr::Struct(s) => s
                .path
                .segments
                .last()
                .map(|g| crate::facts::type_word(&g.ident.to_string())),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if p.path.segments.len() >= 2 => {
                    let n = p.path.segments.len();
                    (p.path.segments[n - 1].ident == "new")
                        .then(|| crate::facts::type_word(&p.path.segments[n - 2].ident.to_string()))
                        .filter(|w| w != "Self")
                }
                _ => None,
            },
            Expr::Path(_) => {
                let n = self.bare(e)?;
                let f = self
                    .facts
                    .link
                    .functions
                    .iter()
                    .rev()
                    .find(|f| f.scope == self.s.scope)?;
                let i = f.params.iter().position(|p| **p == *n)?;
                f.param_types
                    .get(i)?
                    .as_deref()
                    .filter(|w| matches!(*w, "string" | "number" | "bool"))
                    .map(str::to_string)
            }
            _ => None,
        }
    }

    fn link_call(
        &mut self,
        callee: &str,
        args: &[&Expr],
        recv: Option<String>,
        span: Span,
        name_span: Span,
    ) {
        if args.is_empty() || self.s.sites.packer.len() >= MAX_CALL_SITES {
            return;
        }
        // The site is packed at once and let go (`SitePacker`): its
        // arguments' keys and texts are made for it alone, not shared with
        // the earlier sites' (remembered to be shared, those of a builder
        // chain of 4,000 calls held 2 MB no site used any more). The
        // callee is shared: the packer keeps one copy of each name.
        let args = args
            .iter()
            .map(|a| {
                let key = self.key_of(a);
                let name = self.bare(a);
                let ty = self.arg_type(a);
                CallArg {
                    key: std::sync::Arc::new(key),
                    value: self.value_of(a),
                    name: name.map(|n| n.as_str().into()),
                    keyword: None,
                    ty: ty.map(|t| t.as_str().into()),
                }
            })
            .collect();
        let site = CallSite {
            callee: self.s.call_texts.get(callee),
            // (its last segment, all the link reads of it: a chain's
            // receiver is the text of the whole chain before it)
            recv: recv.map(|r| crate::project::link::receiver_tail(&r).into()),
            args,
            scope: self.s.scope,
            order: 0,
            depth: self.s.depth,
            span,
            name_span,
            result_key: None,
        };
        let sites = &mut self.s.sites;
        if let Some(at) = sites.packer.push_order_later(&site) {
            sites.at.push((at, name_span.start() as u32));
        }
    }
}

/// Call sites get the order of the first op at or after them (ops are
/// numbered densely in source order): the link places its instantiated
/// ops just before that op. Written into the packed sites, which are
/// returned.
pub(super) fn order_calls(
    facts: &crate::facts::FileFacts,
    sites: super::Sites,
) -> Option<crate::project::calls::PackedCalls> {
    let super::Sites { mut packer, at } = sites;
    let starts: Vec<usize> = facts.ops.iter().map(|o| o.name_span.start()).collect();
    for (at, name) in at {
        packer.set_order(at, starts.partition_point(|&s| s < name as usize) as u32);
    }
    packer.finish()
}

/// A Rust parameter type as the link compares it ([`crate::facts::type_word`]):
/// the last path segment behind references (`&str` → `string`, `&mut Lock`
/// → `Lock`); `impl Trait`, `dyn Trait`, tuples, slices, function types: none.
fn type_word_of(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Reference(r) => type_word_of(&r.elem),
        syn::Type::Paren(p) => type_word_of(&p.elem),
        syn::Type::Group(g) => type_word_of(&g.elem),
        syn::Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .map(|s| crate::facts::type_word(&s.ident.to_string())),
        _ => None,
    }
}
