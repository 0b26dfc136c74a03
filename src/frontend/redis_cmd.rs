//! Raw redis commands: `.redis` files (one command per line, redis-cli
//! quoting, `#` comments) and shell scripts that run `redis-cli` (directly,
//! through a variable holding `redis-cli …`, inside `$(…)`/backticks, in
//! `if`/`&&` chains, or feeding it a here-document of raw commands).
//!
//! Both end in [`Extractor::command`], which maps one command's words to
//! [`Op`]s as SPEC §2/§3 say. A transaction (`MULTI`…`EXEC`) and `WATCH`
//! live in a [`Session`]: the whole `.redis` file, one here-document, or one
//! `redis-cli` invocation (separate invocations are separate connections).

mod shell;

use crate::facts::{
    AbsenceGuard, Client, FileFacts, KeyExpr, KeyPart, Language, Op, OpKind, Scope, ScopeId,
    ScriptFact, Span, ValueExpr,
};
use crate::frontend::lua;
use crate::words;
use shell::{Part, STok, Word, WordBuilder};
use std::collections::{HashMap, HashSet};

/// Extracts the facts of a `.redis` file or a shell script.
pub fn extract(src: &str, language: Language) -> FileFacts {
    let mut x = Extractor::new(src, language);
    match language {
        Language::Shell => {
            x.top_list(&mut shell::stream(src));
            x.facts
                .absence_guards
                .sort_by_key(|g| (g.write.start(), g.check.start()));
        }
        _ => {
            let mut sess = Session::default();
            let mut start = 0;
            for line in src.split_inclusive('\n') {
                let end = start + line.len();
                let words = raw_line(src, start, end, false);
                let words: Vec<&Word> = words.iter().collect();
                x.command(&words, &mut sess);
                start = end;
            }
        }
    }
    x.facts
}

/// Names of the command-line clients.
const CLIS: &[&str] = &["redis-cli", "valkey-cli", "keydb-cli"];

/// Commands that may stand before `redis-cli` on a line.
const PREFIXES: &[&str] = &[
    "sudo", "command", "exec", "nohup", "env", "timeout", "nice", "time", "docker", "podman",
    "kubectl", "xargs",
];

/// `redis-cli` options that take a value.
const CLI_OPTS_WITH_VALUE: &[&str] = &[
    "-h",
    "-p",
    "-s",
    "-a",
    "-u",
    "-n",
    "-r",
    "-i",
    "-d",
    "-D",
    "-t",
    "--user",
    "--pass",
    "--cacert",
    "--cacertdir",
    "--cert",
    "--key",
    "--sni",
    "--tls-ciphers",
    "--tls-ciphersuites",
    "--pattern",
    "--count",
    "--quoted-pattern",
    "--memkeys-samples",
    "--cluster",
    "--functions-rdb",
];

/// Keys of one multi-key command (`DEL`, `MGET`, `EVAL`) turned into ops;
/// more are ignored (the rules compare ops pairwise).
const MAX_KEYS_PER_COMMAND: usize = 64;

/// Open condition checks kept at once (see [`CondCheck`]); more are ignored.
const MAX_OPEN_CHECKS: usize = 32;

/// Transaction state of one connection.
#[derive(Debug, Default)]
struct Session {
    atomic: bool,
    watched: Vec<KeyExpr>,
}

struct Extractor<'a> {
    src: &'a str,
    facts: FileFacts,
    order: u32,
    scope: ScopeId,
    depth: u32,
    /// Open `{` of the shell script: `Some((scope, depth))` to restore when
    /// the brace closes a function body.
    braces: Vec<Option<(ScopeId, u32)>>,
    /// Variables assigned a `redis-cli …` command.
    cli_vars: HashSet<String>,
    /// Variables bound once, with the class of their value; `None` once rebound.
    vars: HashMap<String, Option<ValueExpr>>,
    /// `EXISTS`/`GET` checks in an `if`/`while` condition whose result says
    /// where the key was found absent (see [`CondCheck`]).
    conds: Vec<CondCheck>,
}

/// An `EXISTS`/`GET` of a key in the condition of an `if`/`while` whose
/// test says which way the key was found (`[ "$(redis-cli EXISTS k)" = 0 ]`,
/// `[ -z "$(redis-cli GET k)" ]`): a plain SET of that key runs only where it
/// was absent when it stands in the branch taken on absence, or after an
/// `if` on presence whose body leaves (`exit`, `return`), or after a `while`
/// that waits while the key is present.
#[derive(Debug)]
struct CondCheck {
    check: Span,
    key: KeyExpr,
    scope: ScopeId,
    /// The depth of the body of the `if`/`while`.
    depth: u32,
    is_while: bool,
    /// The condition is true when the key is absent.
    absent_when_true: bool,
    /// Where writes count as guarded: in the body (absent when true), or
    /// after the `fi`/`done` at `depth - 1`.
    after: bool,
    /// The body (on presence) left the function or script.
    exits: bool,
}

impl<'a> Extractor<'a> {
    fn new(src: &'a str, language: Language) -> Self {
        Extractor {
            src,
            facts: FileFacts::new(language),
            order: 0,
            scope: 0,
            depth: 0,
            braces: Vec::new(),
            cli_vars: HashSet::new(),
            vars: HashMap::new(),
            conds: Vec::new(),
        }
    }

    // ---- shell structure -----------------------------------------------

    /// Walks a command list: splits it into simple commands and finds
    /// function definitions.
    fn list(&mut self, toks: &[STok], nest: u32) {
        let mut cmd: Vec<&STok> = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            if cmd.is_empty() {
                if let Some(next) = self.function_def(toks, i) {
                    i = next;
                    continue;
                }
            }
            match &toks[i] {
                STok::Newline => self.flush(&mut cmd, nest),
                STok::Op(o, _)
                    if matches!(*o, ";" | ";;" | "&&" | "||" | "|" | "|&" | "&" | "(" | ")") =>
                {
                    self.flush(&mut cmd, nest)
                }
                t => cmd.push(t),
            }
            i += 1;
        }
        self.flush(&mut cmd, nest);
    }

    /// [`Self::list`] over a whole script, lexed a batch at a time: the
    /// tokens of the commands already read are dropped.
    fn top_list(&mut self, st: &mut shell::Stream) {
        /// Tokens lexed at once (and the least lookahead kept).
        const BATCH: usize = 4096;
        const AHEAD: usize = 8;
        let mut buf: Vec<STok> = Vec::new();
        // the current command is `buf[cmd..i]`
        let (mut i, mut cmd) = (0usize, 0usize);
        loop {
            if i + AHEAD > buf.len() && !st.done() {
                buf.drain(..cmd);
                i -= cmd;
                cmd = 0;
                // `fill` ends on a token that is not a line break, so the
                // lookahead of `function_def` (line breaks, then `{`) is whole
                st.fill(&mut buf, i + BATCH);
            }
            if i >= buf.len() {
                break;
            }
            if i == cmd {
                if let Some(next) = self.function_def(&buf, i) {
                    i = next;
                    cmd = i;
                    continue;
                }
            }
            let sep = match &buf[i] {
                STok::Newline => true,
                STok::Op(o, _) => {
                    matches!(*o, ";" | ";;" | "&&" | "||" | "|" | "|&" | "&" | "(" | ")")
                }
                _ => false,
            };
            if sep {
                self.flush_range(&buf[cmd..i]);
                cmd = i + 1;
            }
            i += 1;
        }
        self.flush_range(&buf[cmd..i.min(buf.len())]);
    }

    fn flush_range(&mut self, toks: &[STok]) {
        if !toks.is_empty() {
            let cmd: Vec<&STok> = toks.iter().collect();
            self.simple_command(&cmd, 0);
        }
    }

    fn flush(&mut self, cmd: &mut Vec<&STok>, nest: u32) {
        if !cmd.is_empty() {
            self.simple_command(cmd, nest);
            cmd.clear();
        }
    }

    /// `name() {` or `function name [()] {` at `i`: opens the function's
    /// scope and returns the index after the `{`.
    fn function_def(&mut self, toks: &[STok], i: usize) -> Option<usize> {
        let word = |k: usize| match toks.get(k) {
            Some(STok::Word(w)) => w.literal(),
            _ => None,
        };
        let op = |k: usize, s: &str| matches!(toks.get(k), Some(STok::Op(o, _)) if *o == s);
        let first = word(i)?;
        let (name, mut j) = if first == "function" {
            let name = word(i + 1)?;
            let j = if op(i + 2, "(") && op(i + 3, ")") {
                i + 4
            } else {
                i + 2
            };
            (name, j)
        } else if op(i + 1, "(") && op(i + 2, ")") {
            (first, i + 3)
        } else {
            return None;
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'))
        {
            return None;
        }
        while matches!(toks.get(j), Some(STok::Newline)) {
            j += 1;
        }
        if word(j).as_deref() != Some("{") {
            return None;
        }
        let is_test = words::word_parts(&name)
            .first()
            .is_some_and(|w| w == "test");
        let id = self.facts.add_scope(Scope {
            name: name.into_owned(),
            owner: None,
            is_test,
        });
        self.braces.push(Some((self.scope, self.depth)));
        self.scope = id;
        self.depth = 0;
        Some(j + 1)
    }

    fn close_brace(&mut self) {
        if let Some(Some((scope, depth))) = self.braces.pop() {
            self.scope = scope;
            self.depth = depth;
        }
    }

    fn simple_command(&mut self, cmd: &[&STok], nest: u32) {
        // Words, without redirection targets (and their file descriptor numbers).
        let mut words: Vec<&Word> = Vec::new();
        let mut heredoc = None;
        let mut skip_next = false;
        for t in cmd {
            match t {
                STok::Word(w) => {
                    if !std::mem::take(&mut skip_next) {
                        words.push(w);
                    }
                }
                STok::Op(o, span) => {
                    if *o != "<<" {
                        skip_next = true;
                    }
                    if let Some(last) = words.last() {
                        if last.span.end() == span.start()
                            && last.literal().is_some_and(|s| {
                                !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
                            })
                        {
                            words.pop();
                        }
                    }
                }
                STok::Heredoc { body, expand } => heredoc = Some((*body, *expand)),
                STok::Newline => {}
            }
        }
        // Reserved words and braces at the head.
        let mut k = 0;
        let mut cond: Option<(bool, bool)> = None;
        while let Some(w) = words.get(k) {
            match w.literal().as_deref() {
                Some(r @ ("if" | "while" | "until")) => {
                    self.depth += 1;
                    cond = Some((r == "while", false));
                }
                Some("!") => {
                    if let Some(c) = cond.as_mut() {
                        c.1 = !c.1;
                    }
                }
                Some("elif") => {
                    self.end_branch();
                    cond = Some((false, false));
                }
                Some("else") => self.end_branch(),
                Some("then" | "do" | "time") => {}
                Some("fi" | "done" | "esac") => {
                    self.end_block();
                    self.depth = self.depth.saturating_sub(1)
                }
                Some("for" | "case" | "select") => {
                    self.depth += 1;
                    return;
                }
                Some("{") => self.braces.push(None),
                Some("}") => self.close_brace(),
                _ => break,
            }
            k += 1;
        }
        // Command substitutions run before the command itself.
        let before = self.facts.ops.len();
        if nest < 24 {
            for w in &words[k.min(words.len())..] {
                for p in &w.parts {
                    if let Part::Subst { toks, .. } = p {
                        self.list(toks, nest + 1);
                    }
                }
            }
        }
        if let Some((is_while, negated)) = cond {
            self.condition(&words[k.min(words.len())..], before, is_while, negated);
        }
        if words
            .get(k)
            .and_then(|w| w.literal())
            .is_some_and(|h| matches!(&*h, "exit" | "return"))
        {
            let (scope, depth) = (self.scope, self.depth);
            for c in self.conds.iter_mut() {
                if !c.after && c.scope == scope && c.depth == depth {
                    c.exits = true;
                }
            }
        }
        // Assignments.
        while let Some(w) = words.get(k) {
            if !self.assign(w) {
                break;
            }
            k += 1;
        }
        let Some(head) = words.get(k) else {
            return;
        };
        // A command string run later or by another shell: `trap '…' EXIT`,
        // `sh -c '…'`, `bash -c '…'`. Lexed in place when it stands verbatim
        // in the source (one literal run), so positions stay exact.
        let runs_string = match head.literal().as_deref() {
            Some("trap") => words.get(k + 1).copied(),
            Some("sh" | "bash" | "dash" | "zsh" | "ksh") => words
                .iter()
                .skip(k + 1)
                .position(|w| w.literal().as_deref() == Some("-c"))
                .and_then(|p| words.get(k + 2 + p).copied()),
            _ => None,
        };
        if let Some(w) = runs_string {
            if let ([(0, at)], Some(_)) = (w.anchors.as_slice(), w.literal()) {
                if nest < 24 {
                    let toks = shell::lex_range(self.src, *at, at + w.lit_len);
                    self.list(&toks, nest + 1);
                }
            }
            return;
        }
        if matches!(
            head.literal().as_deref(),
            Some("local" | "export" | "readonly" | "declare" | "typeset")
        ) {
            for w in &words[k + 1..] {
                self.assign(w);
            }
            return;
        }
        let cli = if self.is_cli(head) {
            Some(k)
        } else if head
            .literal()
            .is_some_and(|h| PREFIXES.contains(&basename(&h)))
        {
            (k + 1..words.len().min(k + 12)).find(|&j| self.is_cli(words[j]))
        } else {
            None
        };
        let Some(c) = cli else {
            return;
        };
        self.cli_invocation(&words[c + 1..], heredoc);
    }

    /// The condition words of an `if`/`elif`/`while`: the checks its
    /// command substitutions made (ops from `first_op` on) and which way
    /// the test reads them.
    fn condition(&mut self, words: &[&Word], first_op: usize, is_while: bool, negated: bool) {
        let lits: Vec<Option<String>> = words
            .iter()
            .map(|w| w.literal().map(|s| s.into_owned()))
            .collect();
        let lit = |i: usize| lits.get(i).and_then(|l| l.as_deref());
        for op in self.facts.ops.get(first_op..).unwrap_or(&[]) {
            if !matches!(op.kind, OpKind::Exists | OpKind::Get) || op.scope != self.scope {
                continue;
            }
            // the word that holds the substitution, and the test around it
            let Some(at) = words
                .iter()
                .position(|w| w.span.start() <= op.span.start() && op.span.end() <= w.span.end())
            else {
                continue;
            };
            let before = at.checked_sub(1).and_then(lit);
            let (oper, other) = match (lit(at + 1), before) {
                (Some(o), _) if is_test_op(o) => (o, lit(at + 2)),
                (_, Some(o)) if is_test_op(o) => (o, at.checked_sub(2).and_then(lit)),
                _ => continue,
            };
            let present = match (op.kind == OpKind::Exists, oper, other.map(str::trim)) {
                (false, "-z", _) => false,
                (false, "-n", _) => true,
                (false, "=" | "==", Some("")) => false,
                (false, "!=", Some("")) => true,
                (true, "=" | "==" | "-eq", Some("0")) | (true, "-lt", Some("1")) => false,
                (true, "!=" | "-ne", Some("1")) => false,
                (true, "=" | "==" | "-eq" | "-ge", Some("1"))
                | (true, "!=" | "-ne" | "-gt", Some("0")) => true,
                _ => continue,
            };
            // bounded: every SET looks at the open checks
            if self.conds.len() >= MAX_OPEN_CHECKS {
                return;
            }
            self.conds.push(CondCheck {
                check: op.name_span,
                key: op.key.clone(),
                scope: self.scope,
                depth: self.depth,
                is_while,
                absent_when_true: present == negated,
                after: false,
                exits: false,
            });
        }
    }

    /// `else`/`elif` of the `if` at the current depth: the other branch. A
    /// check on absence no longer guards it; a check on presence does.
    fn end_branch(&mut self) {
        let (scope, depth) = (self.scope, self.depth);
        self.conds.retain_mut(|c| {
            if c.after || c.scope != scope || c.depth != depth {
                return true;
            }
            if c.absent_when_true || c.is_while {
                return false;
            }
            c.absent_when_true = true;
            c.exits = false;
            true
        });
    }

    /// `fi`/`done` at the current depth: a check on presence whose body left
    /// (or a `while` that waited while the key was there) guards what follows.
    fn end_block(&mut self) {
        let (scope, depth) = (self.scope, self.depth);
        self.conds.retain_mut(|c| {
            if c.scope != scope {
                return true;
            }
            if c.after {
                // the block holding the guarded code closes
                return c.depth < depth + 1;
            }
            if c.depth != depth {
                return c.depth < depth;
            }
            if !c.absent_when_true && (c.exits || c.is_while) {
                c.after = true;
                return true;
            }
            false
        });
    }

    fn is_cli(&self, w: &Word) -> bool {
        match w.parts.as_slice() {
            [Part::Lit(s)] => CLIS.contains(&basename(s)),
            [Part::Var(v)] => self.cli_vars.contains(v),
            _ => false,
        }
    }

    /// `NAME=value`: records the variable; false when `w` is no assignment.
    fn assign(&mut self, w: &Word) -> bool {
        let Some(Part::Lit(first)) = w.parts.first() else {
            return false;
        };
        let Some(eq) = first.find('=') else {
            return false;
        };
        let name = first[..eq].trim_end_matches('+');
        if name.is_empty()
            || name.starts_with(|c: char| c.is_ascii_digit())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return false;
        }
        let mut parts = vec![Part::Lit(first[eq + 1..].to_string())];
        parts.extend(w.parts[1..].iter().cloned());
        let value = Word {
            parts,
            span: w.span,
            anchors: Vec::new(),
            lit_len: 0,
        };
        let text = value.text();
        if CLIS.iter().any(|c| text.contains(c)) {
            self.cli_vars.insert(name.to_string());
        } else {
            self.cli_vars.remove(name);
        }
        let class = self.value_of(&value);
        self.vars
            .entry(name.to_string())
            .and_modify(|v| *v = None)
            .or_insert(Some(class));
        true
    }

    /// The words after `redis-cli`: options, then a command or a here-document.
    fn cli_invocation(&mut self, words: &[&Word], heredoc: Option<(Span, bool)>) {
        let mut j = 0;
        let mut eval_file = false;
        while let Some(w) = words.get(j) {
            let Some(o) = w.literal() else {
                break;
            };
            if !o.starts_with('-') || o == "-" || o.parse::<f64>().is_ok() {
                break;
            }
            if o == "--eval" {
                eval_file = true;
                j += 2;
                break;
            }
            j += if CLI_OPTS_WITH_VALUE.contains(&&*o) {
                2
            } else {
                1
            };
        }
        let args: &[&Word] = words.get(j..).unwrap_or(&[]);
        let mut sess = Session::default();
        if eval_file {
            // `--eval script.lua key1 key2 , arg1`: the keys come before the comma.
            if let Some(script) = words.get(j.saturating_sub(1)) {
                for key in args
                    .iter()
                    .take_while(|w| w.literal().as_deref() != Some(","))
                {
                    self.push(
                        OpKind::Eval { script: None },
                        key,
                        None,
                        Span::new(script.span.start(), key.span.end()),
                        script.span,
                        &sess,
                    );
                }
            }
            return;
        }
        if !args.is_empty() {
            self.command(args, &mut sess);
        } else if let Some((body, expand)) = heredoc {
            let mut start = body.start();
            let text = self.src.get(body.range()).unwrap_or("");
            for line in text.split_inclusive('\n') {
                let end = start + line.len();
                let words = raw_line(self.src, start, end, expand);
                let words: Vec<&Word> = words.iter().collect();
                self.command(&words, &mut sess);
                start = end;
            }
        }
    }

    // ---- commands --------------------------------------------------------

    /// One raw command (`SET k v NX PX 100`, `DEL k`, …).
    fn command(&mut self, words: &[&Word], sess: &mut Session) {
        let Some(first) = words.first() else {
            return;
        };
        let Some(name) = first.literal() else {
            return;
        };
        let cmd = name.to_ascii_uppercase();
        let args = &words[1..];
        let name_span = first.span;
        let span = Span::new(
            first.span.start(),
            words.last().map_or(first.span.end(), |w| w.span.end()),
        );
        // Where the command's arguments stand, for fixes (`src/fix.rs`).
        if !args.is_empty() {
            self.facts.call_sites.push(
                span,
                Span::new(span.start(), span.start()),
                args.iter().map(|w| w.span),
            );
        }
        let upper = |w: &Word| w.literal().map(|s| s.to_ascii_uppercase());
        let has = |from: usize, opts: &[&str]| {
            args.iter()
                .skip(from)
                .any(|w| upper(w).is_some_and(|s| opts.contains(&s.as_str())))
        };
        match cmd.as_str() {
            "MULTI" => sess.atomic = true,
            "EXEC" | "DISCARD" => {
                sess.atomic = false;
                sess.watched.clear();
            }
            "WATCH" => sess
                .watched
                .extend(args.iter().take(MAX_KEYS_PER_COMMAND).map(|w| key_expr(w))),
            "UNWATCH" => sess.watched.clear(),
            "SET" if args.len() >= 2 => {
                let nx = has(2, &["NX"]);
                let xx = has(2, &["XX"]);
                let ifeq = has(2, &["IFEQ", "IFNE", "IFDEQ", "IFDNE"]);
                let expiry = set_expiry(&args[2..]);
                let kind = if nx {
                    OpKind::Acquire { expiry }
                } else if ifeq {
                    OpKind::CheckedExtend
                } else if xx && expiry {
                    OpKind::Expire
                } else {
                    OpKind::Set { expiry }
                };
                let value = matches!(kind, OpKind::Acquire { .. } | OpKind::Set { .. })
                    .then(|| self.value_of(args[1]));
                self.push(kind, args[0], value, span, name_span, sess);
            }
            "SETNX" if args.len() >= 2 => {
                let value = Some(self.value_of(args[1]));
                self.push(
                    OpKind::Acquire { expiry: false },
                    args[0],
                    value,
                    span,
                    name_span,
                    sess,
                );
            }
            "SETEX" | "PSETEX" if args.len() >= 3 => {
                let value = Some(self.value_of(args[2]));
                self.push(
                    OpKind::Set { expiry: true },
                    args[0],
                    value,
                    span,
                    name_span,
                    sess,
                );
            }
            "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" if !args.is_empty() => {
                self.push(OpKind::Expire, args[0], None, span, name_span, sess);
            }
            "DEL" | "UNLINK" => {
                for k in args.iter().take(MAX_KEYS_PER_COMMAND) {
                    self.push(
                        OpKind::Release { checked: false },
                        k,
                        None,
                        span,
                        name_span,
                        sess,
                    );
                }
            }
            "DELEX" if !args.is_empty() => {
                let checked = has(1, &["IFEQ", "IFNE", "IFDEQ", "IFDNE"]);
                self.push(
                    OpKind::Release { checked },
                    args[0],
                    None,
                    span,
                    name_span,
                    sess,
                );
            }
            "DELIFEQ" if !args.is_empty() => {
                self.push(
                    OpKind::Release { checked: true },
                    args[0],
                    None,
                    span,
                    name_span,
                    sess,
                );
            }
            "GET" if !args.is_empty() => {
                self.push(OpKind::Get, args[0], None, span, name_span, sess);
            }
            "MGET" => {
                for k in args.iter().take(MAX_KEYS_PER_COMMAND) {
                    self.push(OpKind::Get, k, None, span, name_span, sess);
                }
            }
            "GETDEL" if !args.is_empty() => {
                self.push(OpKind::GetDel, args[0], None, span, name_span, sess);
            }
            "GETSET" if !args.is_empty() => {
                self.push(OpKind::GetSet, args[0], None, span, name_span, sess);
            }
            "EXISTS" if args.len() == 1 => {
                self.push(OpKind::Exists, args[0], None, span, name_span, sess);
            }
            "HSETNX" if !args.is_empty() => {
                self.push(OpKind::FieldAcquire, args[0], None, span, name_span, sess);
            }
            "INCR" | "INCRBY" | "INCRBYFLOAT" | "DECR" | "DECRBY" | "HINCRBY" | "HINCRBYFLOAT"
                if !args.is_empty() =>
            {
                self.push(OpKind::Incr, args[0], None, span, name_span, sess);
            }
            "ZADD" | "ZINCRBY" | "ZREM" | "ZREMRANGEBYSCORE" | "ZREMRANGEBYRANK" | "SADD"
            | "SREM" | "LPUSH" | "RPUSH" | "LREM"
                if !args.is_empty() =>
            {
                self.push(OpKind::Members, args[0], None, span, name_span, sess);
            }
            "EVAL" | "EVAL_RO" | "EVALSHA" | "EVALSHA_RO" | "FCALL" | "FCALL_RO"
                if args.len() >= 2 =>
            {
                let script = if cmd.starts_with("EVAL") && !cmd.starts_with("EVALSHA") {
                    self.script(args[0])
                } else {
                    None
                };
                let numkeys = args[1]
                    .literal()
                    .and_then(|s| s.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                for k in args.iter().skip(2).take(numkeys.min(MAX_KEYS_PER_COMMAND)) {
                    self.push(OpKind::Eval { script }, k, None, span, name_span, sess);
                }
            }
            _ => {}
        }
    }

    /// A literal script argument of `EVAL`: analysed, anchored into the source.
    fn script(&mut self, w: &Word) -> Option<crate::facts::ScriptId> {
        let id = crate::facts::next_script_id(&self.facts.scripts)?;
        let text = w.literal()?.into_owned();
        let anchors = if w.anchors.is_empty() {
            vec![(0, w.span.start())]
        } else {
            w.anchors.clone()
        };
        let lua = lua::analyse(&text);
        self.facts.scripts.push(ScriptFact {
            name: None,
            text,
            anchors,
            lua,
            client: Client::RedisCli,
        });
        Some(id)
    }

    fn push(
        &mut self,
        kind: OpKind,
        key: &Word,
        value: Option<ValueExpr>,
        span: Span,
        name_span: Span,
        sess: &Session,
    ) {
        let key = key_expr(key);
        let watched = sess.watched.iter().any(|w| w.parts == key.parts);
        if matches!(kind, OpKind::Set { .. }) {
            for c in &self.conds {
                let here = if c.after {
                    self.depth + 1 >= c.depth
                } else {
                    c.absent_when_true && self.depth >= c.depth
                };
                if here && c.scope == self.scope && c.key.parts == key.parts {
                    self.facts.absence_guards.push(AbsenceGuard {
                        check: c.check,
                        write: name_span,
                    });
                }
            }
        }
        self.order += 1;
        crate::facts::push_by_quarters(&mut self.facts.ops, {
            let mut op = Op::new(
                kind,
                key,
                value,
                self.scope,
                span,
                name_span,
                Client::RedisCli,
            );
            op.order = self.order;
            op.set_depth(self.depth);
            op.set_atomic(sess.atomic);
            op.set_watched(watched);
            op
        });
    }

    // ---- values ----------------------------------------------------------

    fn value_of(&self, w: &Word) -> ValueExpr {
        if let Some(lit) = w.literal() {
            return literal_value(&lit, self.facts.language);
        }
        // Variables bound once to a literal keep the word constant.
        let mut constant = String::new();
        let all_constant = w.parts.iter().all(|p| match p {
            Part::Lit(t) => {
                constant.push_str(t);
                true
            }
            Part::Var(n) => match self.var_value(n) {
                ValueExpr::Constant(c) => {
                    constant.push_str(&c);
                    true
                }
                _ => false,
            },
            _ => false,
        });
        if all_constant {
            return crate::words::constant(&constant);
        }
        let mut unique = false;
        let mut unknown = false;
        let mut weak: Vec<Box<str>> = Vec::new();
        for p in &w.parts {
            let class = match p {
                Part::Lit(_) => continue,
                Part::Var(n) => self.var_value(n),
                Part::Subst { text, .. } => subst_value(text),
                Part::Unknown => ValueExpr::Unknown,
            };
            match class {
                ValueExpr::Unique => unique = true,
                ValueExpr::Weak(what) => {
                    if !weak.contains(&what) {
                        weak.push(what)
                    }
                }
                // A constant variable inside a larger word keeps it constant only
                // if everything else is constant too; treat as unknown.
                ValueExpr::Constant(_) | ValueExpr::Data(_) | ValueExpr::Unknown => unknown = true,
            }
        }
        if unique {
            ValueExpr::Unique
        } else if unknown || weak.is_empty() {
            ValueExpr::Unknown
        } else if weak.len() > 1 && weak.iter().any(|w| &**w == HOST) {
            // A host name with a pid or a time is not a host name alone.
            ValueExpr::Unknown
        } else {
            ValueExpr::Weak(weak.swap_remove(0))
        }
    }

    fn var_value(&self, name: &str) -> ValueExpr {
        match name {
            "$" | "BASHPID" | "PPID" => return ValueExpr::Weak(PID.into()),
            "RANDOM" | "SRANDOM" => return ValueExpr::Weak("a small random number".into()),
            "EPOCHSECONDS" | "EPOCHREALTIME" | "SECONDS" => return ValueExpr::Weak(TIME.into()),
            "HOSTNAME" | "HOST" => return ValueExpr::Weak(HOST.into()),
            _ => {}
        }
        match self.vars.get(name) {
            Some(Some(v)) => v.clone(),
            Some(None) => ValueExpr::Unknown,
            None => words::classify_value_words(name).unwrap_or_default(),
        }
    }
}

/// A `test`/`[`/`[[` operator that compares or checks a string.
fn is_test_op(o: &str) -> bool {
    matches!(
        o,
        "=" | "==" | "!=" | "-eq" | "-ne" | "-gt" | "-ge" | "-lt" | "-le" | "-z" | "-n"
    )
}

const PID: &str = "a process id";
const TIME: &str = "the current time";
const HOST: &str = "a host name";

/// The class of a literal value. In `.redis` files (command sheets) a
/// token that looks random (a UUID, 16+ hex digits) or a placeholder
/// (`<token>`) stands for a per-acquisition token.
fn literal_value(lit: &str, language: Language) -> ValueExpr {
    let t = lit.trim();
    if t.len() > 2 && t.starts_with('<') && t.ends_with('>') {
        return ValueExpr::Unknown;
    }
    if language == Language::Redis {
        let hex = t.chars().filter(|c| c.is_ascii_hexdigit()).count();
        if hex >= 16 && t.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return ValueExpr::Unique;
        }
    }
    words::constant(lit)
}

/// The class of a command substitution used as a value.
fn subst_value(text: &str) -> ValueExpr {
    let lower = text.to_ascii_lowercase();
    let body = lower
        .trim_start_matches("$(")
        .trim_start_matches('`')
        .trim_start();
    let first = body
        .split(|c: char| c.is_whitespace() || c == ')' || c == '`')
        .next()
        .unwrap_or("");
    if [
        "uuidgen",
        "random/uuid",
        "openssl rand",
        "urandom",
        "uuid",
        "gen-random",
        "mktemp",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        return ValueExpr::Unique;
    }
    if lower.contains("hostname") || lower.contains("uname -n") {
        return ValueExpr::Weak(HOST.into());
    }
    if basename(first) == "date" {
        return ValueExpr::Weak(TIME.into());
    }
    if lower.contains("$$") || lower.contains("bashpid") {
        return ValueExpr::Weak(PID.into());
    }
    if lower.contains("$random") {
        return ValueExpr::Weak("a small random number".into());
    }
    words::classify_value_words(text).unwrap_or_default()
}

/// `EX`/`PX`/`EXAT`/`PXAT` with a value that is not a literal zero.
fn set_expiry(opts: &[&Word]) -> bool {
    opts.iter().enumerate().any(|(i, w)| {
        w.literal().is_some_and(|s| {
            matches!(
                s.to_ascii_uppercase().as_str(),
                "EX" | "PX" | "EXAT" | "PXAT"
            )
        }) && opts.get(i + 1).is_some_and(|v| match v.literal() {
            Some(s) => !s.trim().parse::<f64>().is_ok_and(|n| n == 0.0),
            None => true,
        })
    })
}

fn key_expr(w: &Word) -> KeyExpr {
    let mut k = KeyExpr::default();
    for p in &w.parts {
        match p {
            Part::Lit(s) => k.push(KeyPart::Lit(s.clone().into())),
            Part::Var(n) => {
                k.push(KeyPart::Var(n.clone().into()));
                k.idents.push(n.clone());
            }
            Part::Subst { .. } | Part::Unknown => k.push(KeyPart::Unknown),
        }
    }
    if k.parts.is_empty() {
        k.parts.push(KeyPart::Lit(String::new().into()));
    }
    k
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// The words of one raw command line (redis-cli syntax): `"…"` with
/// backslash escapes, `'…'`, bare words; a `#` starting a word comments out
/// the rest of the line. With `expand` (an unquoted here-document body) or
/// in a `.redis` sheet, `$NAME`/`${NAME}` are variables; with `expand`,
/// `$(…)` is a command substitution.
fn raw_line(src: &str, start: usize, end: usize, expand: bool) -> Vec<Word> {
    let b = src.as_bytes();
    let end = end.min(b.len());
    let mut out = Vec::new();
    let mut i = start;
    let boundary = |mut j: usize| {
        while j < end && !src.is_char_boundary(j) {
            j += 1;
        }
        j
    };
    loop {
        while i < end && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= end || b[i] == b'#' {
            break;
        }
        let ws = i;
        let mut w = WordBuilder::default();
        while i < end && !b[i].is_ascii_whitespace() {
            match b[i] {
                b'"' => {
                    i += 1;
                    while i < end && b[i] != b'"' {
                        if b[i] == b'\\' && i + 1 < end {
                            let (text, len) = redis_escape(&b[i + 1..end]);
                            w.decoded(&text);
                            i = boundary(i + 1 + len);
                        } else if b[i] == b'$' && expand {
                            i = dollar(src, i, end, &mut w);
                        } else {
                            let mut j = i;
                            while j < end && !matches!(b[j], b'"' | b'\\' | b'$') {
                                j += 1;
                            }
                            let j = boundary(j.max(i + 1));
                            w.lit(src, i, j);
                            i = j;
                        }
                    }
                    i = (i + 1).min(end);
                }
                b'\'' => {
                    i += 1;
                    while i < end && b[i] != b'\'' {
                        if b[i] == b'\\' && i + 1 < end && b[i + 1] == b'\'' {
                            w.decoded("'");
                            i += 2;
                        } else {
                            let mut j = i + 1;
                            while j < end && !matches!(b[j], b'\'' | b'\\') {
                                j += 1;
                            }
                            let j = boundary(j);
                            w.lit(src, i, j);
                            i = j;
                        }
                    }
                    i = (i + 1).min(end);
                }
                b'$' if expand || is_var_start(b.get(i + 1).copied()) => {
                    i = dollar(src, i, end, &mut w);
                }
                _ => {
                    let mut j = i + 1;
                    while j < end
                        && !b[j].is_ascii_whitespace()
                        && !matches!(b[j], b'"' | b'\'' | b'$')
                    {
                        j += 1;
                    }
                    let j = boundary(j);
                    w.lit(src, i, j);
                    i = j;
                }
            }
        }
        out.push(w.finish(Span::new(ws, i)));
    }
    out
}

fn is_var_start(c: Option<u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b'{')
}

/// A `$` expansion at `i` inside a raw line: returns the index after it.
fn dollar(src: &str, i: usize, end: usize, w: &mut WordBuilder) -> usize {
    let b = src.as_bytes();
    match b.get(i + 1).copied() {
        Some(b'(') if i + 1 < end => {
            let mut d = 0u32;
            let mut j = i + 1;
            while j < end {
                match b[j] {
                    b'(' => d += 1,
                    b')' => {
                        d = d.saturating_sub(1);
                        if d == 0 {
                            j += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            let j = j.min(end);
            let text = src.get(i..j).unwrap_or("").to_string();
            w.part(Part::Subst {
                toks: Vec::new(),
                text,
            });
            j
        }
        Some(b'{') => {
            let s = i + 2;
            let mut j = s;
            while j < end && b[j] != b'}' {
                j += 1;
            }
            let name: String = src
                .get(s..j)
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            w.part(Part::Var(name));
            (j + 1).min(end)
        }
        Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
            let s = i + 1;
            let mut j = s;
            while j < end && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            w.part(Part::Var(src.get(s..j).unwrap_or("").to_string()));
            j
        }
        Some(c) if c.is_ascii_digit() || c == b'$' => {
            w.part(Part::Var((c as char).to_string()));
            (i + 2).min(end)
        }
        _ => {
            w.lit(src, i, i + 1);
            i + 1
        }
    }
}

/// A redis-cli escape after a backslash: its text and the source bytes it used.
fn redis_escape(rest: &[u8]) -> (String, usize) {
    match rest.first() {
        Some(b'n') => ("\n".into(), 1),
        Some(b'r') => ("\r".into(), 1),
        Some(b't') => ("\t".into(), 1),
        Some(b'b') => ("\u{8}".into(), 1),
        Some(b'a') => ("\u{7}".into(), 1),
        Some(b'x')
            if rest.len() >= 3 && rest[1].is_ascii_hexdigit() && rest[2].is_ascii_hexdigit() =>
        {
            let v = u8::from_str_radix(std::str::from_utf8(&rest[1..3]).unwrap_or("0"), 16)
                .unwrap_or(0);
            ((v as char).to_string(), 3)
        }
        Some(&c) if c.is_ascii() => ((c as char).to_string(), 1),
        // A non-ASCII character: kept by the caller as the next literal run.
        _ => (String::new(), 0),
    }
}

#[cfg(test)]
mod tests;
