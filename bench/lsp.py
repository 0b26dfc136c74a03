#!/usr/bin/env python3
"""Times `locklint server` on one document, as an editor drives it.

Usage: python3 bench/lsp.py BINARY FILE [REQUESTS]

Opens FILE (didOpen, waits for its diagnostics), then sends REQUESTS
code-action and hover requests at its last diagnostic and prints the time
of each step; last, a hash of everything the server answered (the
diagnostics, the code actions over the whole document, hovers at the end
of the first 200 diagnostics), to compare two builds' answers. The server
finds the language from the path; `languageId` is not read.
"""
import json, subprocess, sys, time
binary, path = sys.argv[1], sys.argv[2]
reqs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
text = open(path).read()
p = subprocess.Popen([binary, "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(obj):
    b = json.dumps(obj).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b); p.stdin.flush()
def recv():
    n = None
    while True:
        line = p.stdout.readline()
        if line in (b"\r\n", b"\n"): break
        if line.lower().startswith(b"content-length:"): n = int(line.split(b":")[1])
    return json.loads(p.stdout.read(n))
def wait(pred):
    while True:
        m = recv()
        if pred(m): return m
uri = "file://" + path
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": None}})
wait(lambda m: m.get("id") == 1)
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
t = time.time()
send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "plaintext", "version": 1, "text": text}}})
m = wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
t_open = time.time() - t
diags = m["params"]["diagnostics"]
last = diags[-1]["range"] if diags else {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
t = time.time()
acts = 0
for i in range(reqs):
    send({"jsonrpc": "2.0", "id": 100 + i, "method": "textDocument/codeAction", "params": {"textDocument": {"uri": uri}, "range": last, "context": {"diagnostics": []}}})
    r = wait(lambda m: m.get("id") == 100 + i); acts = len(r.get("result") or [])
t_act = (time.time() - t) / reqs
t = time.time()
for i in range(reqs):
    send({"jsonrpc": "2.0", "id": 200 + i, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri}, "position": last["start"]}})
    r = wait(lambda m: m.get("id") == 200 + i)
t_hover = (time.time() - t) / reqs
hv = bool(r.get("result"))
send({"jsonrpc": "2.0", "id": 300, "method": "textDocument/codeAction", "params": {"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 10**6, "character": 0}}, "context": {"diagnostics": []}}})
ALL = wait(lambda m: m.get("id") == 300).get("result") or []
HOV = []
for j, d in enumerate(diags[:200]):
    send({"jsonrpc": "2.0", "id": 400 + j, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri}, "position": d["range"]["end"]}})
    HOV.append(wait(lambda m: m.get("id") == 400 + j).get("result"))
send({"jsonrpc": "2.0", "id": 9, "method": "shutdown"}); wait(lambda m: m.get("id") == 9)
send({"jsonrpc": "2.0", "method": "exit"}); p.wait(timeout=10)
print(f"{path}: {len(diags)} diagnostics; open+publish {t_open:.3f} s; codeAction {t_act:.3f} s ({acts} actions); hover {t_hover:.3f} s (hit {hv})")
import hashlib
print("HASH", hashlib.md5((json.dumps(diags, sort_keys=True) + json.dumps(ALL, sort_keys=True) + json.dumps(HOV, sort_keys=True)).encode()).hexdigest(), len(ALL), "actions over the whole document", sum(1 for h in HOV if h), "hovers")
