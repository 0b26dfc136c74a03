//! `locklint server`: a language server over stdio. Diagnostics on open,
//! change and save for every language locklint reads; the fixes as code
//! actions; hover on a finding shows its rule's `explain` text; settings from
//! the workspace's `locklint.toml`.
//!
//! Messages are framed and parsed here (not by `lsp-server`'s stdio
//! transport, which stops at the first malformed message): a message that is
//! not JSON, or not JSON-RPC, gets an error reply and the session goes on.
//! The `lsp-server` types and channels carry everything else.

use crate::advice::Target;
use crate::config::{self, Config};
use crate::facts::Language;
use crate::finding::{Applicability, Finding, LineIndex};
use crate::{engine, filter, Settings};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams,
    CodeActionProviderCapability, Diagnostic, DiagnosticSeverity, DidChangeTextDocumentParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams, Hover,
    HoverContents, HoverParams, HoverProviderCapability, InitializeParams, MarkupContent,
    MarkupKind, NumberOrString, Position, PublishDiagnosticsParams, Range, ServerCapabilities,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions, TextEdit, Url, WorkspaceEdit,
};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Largest message accepted (a whole file's text rides in `didOpen`).
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// One frame read from the client.
enum Frame {
    Message(Message),
    /// Not JSON, or JSON that is not a JSON-RPC message: (id if any, code, text).
    Invalid(Option<serde_json::Value>, i32, String),
    End,
}

/// Reads one `Content-Length` framed message.
fn read_frame(input: &mut impl BufRead) -> std::io::Result<Frame> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(Frame::End);
        }
        let l = line.trim_end();
        if l.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = l.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok();
            }
        }
    }
    let n = length.unwrap_or(0);
    if n > MAX_MESSAGE_BYTES {
        return Ok(Frame::End);
    }
    let mut body = vec![0; n];
    input.read_exact(&mut body)?;
    let value: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return Ok(Frame::Invalid(None, -32700, format!("parse error: {e}"))),
    };
    let id = value.get("id").cloned();
    match serde_json::from_value::<Message>(value) {
        Ok(m) => Ok(Frame::Message(m)),
        Err(e) => Ok(Frame::Invalid(
            id,
            ErrorCode::InvalidRequest as i32,
            format!("invalid request: {e}"),
        )),
    }
}

fn write_frame(out: &Mutex<std::io::Stdout>, body: &str) {
    if let Ok(mut o) = out.lock() {
        let _ = write!(o, "Content-Length: {}\r\n\r\n{body}", body.len());
        let _ = o.flush();
    }
}

/// Runs the server on stdin/stdout until `exit` (or the end of input).
pub fn run_stdio() -> Result<(), String> {
    let (to_server, from_client) = crossbeam_channel::unbounded::<Message>();
    let (to_client, from_server) = crossbeam_channel::unbounded::<Message>();
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let out_reader = Arc::clone(&stdout);
    let reader = std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = BufReader::new(stdin.lock());
        loop {
            match read_frame(&mut input) {
                Ok(Frame::Message(m)) => {
                    let exit = matches!(&m, Message::Notification(n) if n.method == "exit");
                    if to_server.send(m).is_err() || exit {
                        break;
                    }
                }
                Ok(Frame::Invalid(id, code, message)) => {
                    let reply = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": id.unwrap_or(serde_json::Value::Null),
                        "error": { "code": code, "message": message },
                    });
                    write_frame(&out_reader, &reply.to_string());
                }
                Ok(Frame::End) | Err(_) => break,
            }
        }
    });
    let out_writer = Arc::clone(&stdout);
    let writer = std::thread::spawn(move || {
        for m in from_server {
            if let Ok(text) = serde_json::to_string(&m) {
                write_frame(&out_writer, &text);
            }
        }
    });
    let connection = Connection {
        sender: to_client,
        receiver: from_client,
    };
    let result = serve(&connection);
    drop(connection);
    let _ = writer.join();
    // The reader ends on `exit` or end of input; it is not waited for when
    // the session ended without one (stdin may stay open).
    if reader.is_finished() {
        let _ = reader.join();
    }
    result
}

/// The capabilities locklint offers.
fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::FULL),
                save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                ..TextDocumentSyncOptions::default()
            },
        )),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        ..ServerCapabilities::default()
    }
}

/// The session: open documents and the settings of the workspace.
struct State {
    settings: Settings,
    /// The workspace root, to show paths relative to it.
    root: Option<PathBuf>,
    docs: HashMap<Url, String>,
    /// The project of the workspace root, read once: open documents are
    /// checked linked against it, as `locklint <file>` is from the root.
    workspace: Option<engine::Workspace>,
    /// The findings of each open document at its last change.
    found: HashMap<Url, Vec<Finding>>,
}

/// Serves one connection: the `initialize` handshake, then messages until `exit`.
pub fn serve(connection: &Connection) -> Result<(), String> {
    let caps = serde_json::to_value(capabilities()).map_err(|e| e.to_string())?;
    let init = connection
        .initialize(caps)
        .map_err(|e| format!("initialize: {e}"))?;
    let params: InitializeParams = serde_json::from_value(init).unwrap_or_default();
    #[allow(deprecated)] // root_uri: still what most clients send
    let root = params
        .workspace_folders
        .as_ref()
        .and_then(|f| f.first())
        .map(|f| f.uri.clone())
        .or(params.root_uri.clone())
        .and_then(|u| u.to_file_path().ok());
    let (settings, warning) = workspace_settings(root.as_deref());
    // The project root the CLI would find from the workspace folder.
    let project_root = root.as_ref().and_then(|r| locklint_project_root(r));
    let workspace = project_root
        .as_deref()
        .map(|r| engine::Workspace::load(r, &settings));
    let mut state = State {
        settings,
        root,
        docs: HashMap::new(),
        workspace,
        found: HashMap::new(),
    };
    if let Some(w) = warning {
        notify(
            connection,
            "window/showMessage",
            serde_json::json!({ "type": 2, "message": w }),
        );
    }
    for msg in &connection.receiver {
        match msg {
            Message::Request(req) => {
                if connection
                    .handle_shutdown(&req)
                    .map_err(|e| e.to_string())?
                {
                    return Ok(());
                }
                let resp = state.request(req);
                let _ = connection.sender.send(Message::Response(resp));
            }
            Message::Notification(n) => {
                if n.method == "exit" {
                    return Ok(());
                }
                for (uri, diags) in state.notification(n) {
                    let params = PublishDiagnosticsParams {
                        uri,
                        diagnostics: diags,
                        version: None,
                    };
                    notify(
                        connection,
                        "textDocument/publishDiagnostics",
                        serde_json::to_value(params).unwrap_or_default(),
                    );
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

fn notify(connection: &Connection, method: &str, params: serde_json::Value) {
    let _ = connection
        .sender
        .send(Message::Notification(Notification::new(
            method.into(),
            params,
        )));
}

/// The settings of `locklint.toml` (or `.locklint.toml`, `[tool.locklint]`)
/// found from the workspace root upwards; the defaults and a warning when
/// it does not load.
fn workspace_settings(root: Option<&Path>) -> (Settings, Option<String>) {
    let found = root.and_then(config::discover);
    let cfg = match found.as_deref().map(config::load).transpose() {
        Ok(c) => c.unwrap_or_else(Config::defaults),
        Err(e) => {
            return (
                Settings::default(),
                Some(format!("locklint: configuration ignored: {e}")),
            )
        }
    };
    let settings = Settings {
        select: cfg.select.clone(),
        ignore: cfg.ignore.clone(),
        severity: cfg.severity.clone(),
        tests: cfg.tests.unwrap_or(false),
        lock_key_patterns: cfg.lock_key_patterns.clone(),
        target: Target {
            min_redis: cfg.min_redis_version,
        },
        threads: 1,
        exclude: root.and_then(|r| cfg.exclude_matcher(r).ok()),
        project_root: None,
        // The phase-one cache of the project root, as the CLI keeps it.
        cache: true,
        include_minified: cfg.include_minified.unwrap_or(false),
        include_generated: cfg.include_generated.unwrap_or(false),
    };
    (settings, None)
}

/// The project root of the workspace folder (nearest `.git` or locklint
/// configuration, SPEC §5), as the CLI finds it from there.
fn locklint_project_root(folder: &Path) -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| folder.to_path_buf());
    crate::project::root::find(&[folder.to_path_buf()], &cwd)
}

impl State {
    fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        let result = match req.method.as_str() {
            "textDocument/codeAction" => serde_json::from_value::<CodeActionParams>(req.params)
                .map(|p| serde_json::to_value(self.code_actions(p)).unwrap_or_default()),
            "textDocument/hover" => serde_json::from_value::<HoverParams>(req.params)
                .map(|p| serde_json::to_value(self.hover(p)).unwrap_or_default()),
            other => {
                return Response::new_err(
                    id,
                    ErrorCode::MethodNotFound as i32,
                    format!("locklint does not handle `{other}`"),
                )
            }
        };
        match result {
            Ok(v) => Response::new_ok(id, v),
            Err(e) => invalid_params(id, e),
        }
    }

    /// Updates the documents; returns the diagnostics to publish.
    fn notification(&mut self, n: Notification) -> Vec<(Url, Vec<Diagnostic>)> {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                let uri = p.text_document.uri;
                self.docs.insert(uri.clone(), p.text_document.text);
                self.refresh(&uri);
                vec![(uri.clone(), self.diagnostics(&uri))]
            }
            "textDocument/didChange" => {
                let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                let uri = p.text_document.uri;
                // Full sync: the last change holds the whole text.
                if let Some(c) = p.content_changes.into_iter().last() {
                    self.docs.insert(uri.clone(), c.text);
                }
                self.refresh(&uri);
                vec![(uri.clone(), self.diagnostics(&uri))]
            }
            "textDocument/didSave" => {
                let Ok(p) = serde_json::from_value::<DidSaveTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                let uri = p.text_document.uri;
                if let Some(text) = p.text {
                    self.docs.insert(uri.clone(), text);
                }
                self.refresh(&uri);
                vec![(uri.clone(), self.diagnostics(&uri))]
            }
            "textDocument/didClose" => {
                let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                self.docs.remove(&p.text_document.uri);
                self.found.remove(&p.text_document.uri);
                vec![(p.text_document.uri, Vec::new())]
            }
            _ => Vec::new(),
        }
    }

    /// Checks one open document again: linked against the workspace's
    /// project when there is one (its own summaries refreshed), else alone.
    fn refresh(&mut self, uri: &Url) {
        let Some(text) = self.docs.get(uri) else {
            return;
        };
        let path = uri
            .to_file_path()
            .unwrap_or_else(|_| PathBuf::from(uri.path()));
        let Some(language) = Language::from_path(&path) else {
            self.found.remove(uri);
            return;
        };
        let shown = self
            .root
            .as_deref()
            .and_then(|r| path.strip_prefix(r).ok())
            .unwrap_or(&path)
            .display()
            .to_string();
        let findings = match self.workspace.as_mut() {
            Some(ws) => ws.check_source(&path, &shown, text, language, &self.settings),
            None => engine::check_source(&shown, text, language, &self.settings),
        };
        self.found.insert(uri.clone(), findings);
    }

    /// The findings of one open document (at its last change), with the
    /// index of its positions (made once per request: a position counted
    /// from the document's start for each finding made every request
    /// quadratic in the findings of a large document).
    fn findings(&self, uri: &Url) -> Option<(&str, LineIndex<'_>, &[Finding])> {
        let text = self.docs.get(uri)?;
        let found = self.found.get(uri)?;
        Some((text, LineIndex::utf16(text), found))
    }

    fn diagnostics(&self, uri: &Url) -> Vec<Diagnostic> {
        let Some((_, index, findings)) = self.findings(uri) else {
            return Vec::new();
        };
        findings.iter().map(|f| diagnostic(&index, f)).collect()
    }

    fn code_actions(&self, p: CodeActionParams) -> Vec<CodeActionOrCommand> {
        let uri = p.text_document.uri;
        let Some((_, index, findings)) = self.findings(&uri) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for f in findings {
            let Some(fix) = &f.fix else {
                continue;
            };
            let d = diagnostic(&index, f);
            if fix.applicability == Applicability::DisplayOnly || !overlaps(d.range, p.range) {
                continue;
            }
            let edits = fix
                .edits
                .iter()
                .map(|e| TextEdit {
                    range: Range::new(
                        position(&index, e.span.start()),
                        position(&index, e.span.end()),
                    ),
                    new_text: e.replacement.to_string(),
                })
                .collect();
            let title = match fix.applicability {
                Applicability::Safe => format!("{}: {}", f.code(), fix.message),
                _ => format!("{}: {} (unsafe: review it)", f.code(), fix.message),
            };
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title,
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![d]),
                edit: Some(WorkspaceEdit {
                    changes: Some(HashMap::from([(uri.clone(), edits)])),
                    ..WorkspaceEdit::default()
                }),
                is_preferred: Some(fix.applicability == Applicability::Safe),
                ..CodeAction::default()
            }));
        }
        out
    }

    fn hover(&self, p: HoverParams) -> Option<Hover> {
        let pos = p.text_document_position_params;
        let (_, index, findings) = self.findings(&pos.text_document.uri)?;
        let at = offset(&index, pos.position);
        let f = findings
            .iter()
            .find(|f| f.span.start() <= at && at <= f.span.end().max(f.span.start() + 1))?;
        let meta = filter::lookup(f.code())?;
        let value = format!(
            "**{} {}** ({})\n\n{}\n\n{}",
            meta.code,
            meta.name,
            meta.severity.as_str(),
            meta.summary,
            meta.doc.trim_end()
        );
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            }),
            range: Some(diagnostic(&index, f).range),
        })
    }
}

fn invalid_params(id: RequestId, e: serde_json::Error) -> Response {
    Response::new_err(id, ErrorCode::InvalidParams as i32, e.to_string())
}

fn overlaps(a: Range, b: Range) -> bool {
    let key = |p: Position| (p.line, p.character);
    key(a.start) <= key(b.end) && key(b.start) <= key(a.end)
}

fn diagnostic(index: &LineIndex, f: &Finding) -> Diagnostic {
    let message = f.full_message(false);
    Diagnostic {
        range: Range::new(
            position(index, f.span.start()),
            position(index, f.span.end()),
        ),
        severity: Some(match f.severity {
            crate::Severity::Error => DiagnosticSeverity::ERROR,
            crate::Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(f.code().to_string())),
        source: Some("locklint".into()),
        message,
        ..Diagnostic::default()
    }
}

/// A byte offset as an LSP position (0-based line, UTF-16 code units).
fn position(index: &LineIndex, offset: usize) -> Position {
    let (line, column) = index.line_col(offset);
    Position::new((line - 1) as u32, (column - 1) as u32)
}

/// An LSP position as a byte offset (clamped to its line; a unit inside a
/// surrogate pair is the next character's).
fn offset(index: &LineIndex, pos: Position) -> usize {
    let line = pos.line as usize + 1;
    let Some(start) = index.line_start(line) else {
        return index.text_len();
    };
    // (the line's end is its `\n`: a `\r` before it is a column too)
    let end = index
        .line_start(line + 1)
        .map_or(index.text_len(), |s| s - 1);
    let column = index.byte_column(line, pos.character as usize + 1) - 1;
    start + column.min(end - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units() {
        let text = "a\n𝄞é = x\n";
        let index = LineIndex::utf16(text);
        // `=` is after 𝄞 (2 units) é (1) and a space (1).
        let eq = text.find('=').unwrap();
        assert_eq!(position(&index, eq), Position::new(1, 4));
        assert_eq!(offset(&index, Position::new(1, 4)), eq);
        assert_eq!(offset(&index, Position::new(9, 0)), text.len());
    }

    /// A position counted from the document's start (the server's first
    /// way, quadratic over many findings): the oracle of [`position`].
    fn position_by_scan(text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line = text[..line_start].matches('\n').count();
        let character: usize = text[line_start..offset].chars().map(char::len_utf16).sum();
        Position::new(line as u32, character as u32)
    }

    /// The oracle of [`offset`], by a walk from the document's start.
    fn offset_by_scan(text: &str, pos: Position) -> usize {
        let mut start = 0;
        for _ in 0..pos.line {
            match text[start..].find('\n') {
                Some(i) => start += i + 1,
                None => return text.len(),
            }
        }
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let mut units = 0u32;
        for (i, c) in text[start..line_end].char_indices() {
            if units >= pos.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        line_end
    }

    #[test]
    fn positions_by_the_index_are_those_of_a_scan() {
        // long lines past several checkpoints, four-byte characters (two
        // units) across checkpoint bounds, `\r\n`, an empty line, ASCII
        // text and text without a final newline
        let mut long = String::new();
        for i in 0..12_000 {
            long.push(match i % 11 {
                0 => '𝄞',
                3 => 'é',
                7 => '日',
                _ => 'x',
            });
        }
        let texts = [
            format!("a\r\n{long}\r\n\nb𝄞\n{long}"),
            format!("{long}\n"),
            "plain ascii\nlines only\n".repeat(900),
            "𝄞".repeat(5000),
        ];
        for text in &texts {
            let index = LineIndex::utf16(text);
            for at in (0..=text.len()).step_by(37).chain([text.len()]) {
                assert_eq!(
                    position(&index, at),
                    position_by_scan(text, at),
                    "offset {at}"
                );
            }
            let lines = text.matches('\n').count() as u32 + 2;
            for line in 0..lines {
                // the line's width in units
                let end = offset_by_scan(text, Position::new(line, u32::MAX));
                let width = position_by_scan(text, end).character;
                for ch in (0..width.min(30_000)).step_by(41).chain([
                    0,
                    1,
                    2,
                    3,
                    width.saturating_sub(1),
                    width,
                    width + 5,
                ]) {
                    let p = Position::new(line, ch);
                    assert_eq!(offset(&index, p), offset_by_scan(text, p), "{p:?}");
                }
            }
        }
    }

    #[test]
    fn a_malformed_frame_is_reported_not_fatal() {
        let input = b"Content-Length: 5\r\n\r\n{bad}Content-Length: 2\r\n\r\n{}";
        let mut r = BufReader::new(&input[..]);
        assert!(matches!(
            read_frame(&mut r),
            Ok(Frame::Invalid(None, -32700, _))
        ));
        assert!(matches!(
            read_frame(&mut r),
            Ok(Frame::Invalid(_, -32600, _))
        ));
        assert!(matches!(read_frame(&mut r), Ok(Frame::End)));
    }
}
