"""Drive `agrag-engine serve` with the official MCP Python SDK (PyPI `mcp`), over stdio and
over streamable HTTP, and assert the answers (issue 7).

Usage: client.py --binary PATH --root ROOT

ROOT must hold a run published from data/fixtures/pubmedqa-60.jsonl. Exits non-zero on the
first failed assertion, printing what was asked and what came back.
"""

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

QUESTION = "Do statins reduce mortality after myocardial infarction?"
TIMEOUT_S = 60


def check(cond, what, got=None):
    if not cond:
        raise AssertionError(f"{what}; got: {got!r}"[:2000])


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


@asynccontextmanager
async def over_stdio(binary, root, env=None):
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--root", root],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("MCP_")}, **(env or {})},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            yield session


def raw_post(port, body):
    """POSTs raw bytes to /mcp outside any session; returns (HTTP status, body text)."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def declared_oversize_post(port, length):
    """Sends only the headers of a POST declaring a body of `length` bytes, with
    `Expect: 100-continue`, and returns the status the server answers before any body byte.

    (Sending a body over the limit outright races: the server answers 413 and closes while the
    client is still uploading, which a client may see as a broken pipe instead of the 413.)"""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n"
        "Expect: 100-continue\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as s:
        s.sendall(head.encode())
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


async def hostile_http(session):
    """Bodies the SDK client would never send: nesting past the parser's depth limit, a body
    that is not JSON, a body declared over the 4 MiB limit, a foreign Host header. Each is
    refused with a 4xx status; the session keeps working."""
    port = session.http_port
    deep = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_themes","arguments":{"query":' + b"[" * 100_000 + b"]" * 100_000 + b"}}}"
    for what, body in [
        ("nesting 100,000 deep", deep),
        ("not JSON", b"this is not json"),
    ]:
        status, text = await asyncio.to_thread(raw_post, port, body)
        print(f"[http] raw POST with {what}: HTTP {status}", flush=True)
        check(400 <= status < 500, f"{what} is refused with a 4xx status", (status, text[:200]))
    status = await asyncio.to_thread(declared_oversize_post, port, 5 << 20)
    print(f"[http] POST declaring a 5 MiB body (Expect: 100-continue): HTTP {status}", flush=True)
    check(status == 413, "a body declared over 4 MiB is refused with 413 before it is sent", status)
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    conn.request("POST", "/mcp", body=b"{}", headers={"Host": "evil.example", "Content-Type": "application/json",
                                                      "Accept": "application/json, text/event-stream"})
    status = conn.getresponse().status
    conn.close()
    print(f"[http] foreign Host header: HTTP {status}", flush=True)
    check(400 <= status < 500, "a foreign Host is refused (DNS rebinding)", status)
    r = await call(session, "find_by_meaning", {"term": "myocardial infarction", "sample": 1})
    check(r.structured_content["status"] == "ok", "the session still serves after hostile bodies", text_of(r))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def over_http(binary, root, env=None):
    port = free_port()
    proc = subprocess.Popen(
        [binary, "serve", "--root", root, "--http", f"127.0.0.1:{port}"],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("MCP_")}, **(env or {})},
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                check(proc.poll() is None, "the HTTP server exited early", proc.returncode)
                check(time.time() < deadline, "the HTTP server listens within 30 s")
                time.sleep(0.1)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write) as session:
                session.http_port = port
                yield session
        check(proc.poll() is None, "the HTTP server is still running after the session")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def call(session, name, args):
    return await asyncio.wait_for(session.call_tool(name, args), TIMEOUT_S)


async def expect_invalid(session, name, args, fields):
    r = await call(session, name, args)
    t = text_of(r)
    check(r.is_error, f"{name} {str(args)[:80]} is an error", t)
    check(t.startswith("Invalid arguments."), f"{name}: message begins 'Invalid arguments.'", t)
    check(len(t) < 2000, f"{name}: the message stays short", len(t))
    got = [e["field"] for e in r.structured_content["errors"]]
    check(got == fields, f"{name}: the bad fields are named", got)
    for f in fields:
        check(f"`{f}`" in t, f"{name}: the text names `{f}`", t)
    return t


async def scenario(session, transport):
    print(f"[{transport}] initialize", flush=True)
    init = await session.initialize()
    check(init.server_info.name == "agrag-engine", "server name", init.server_info)
    check(init.capabilities.tools is not None, "tools capability", init.capabilities)

    print(f"[{transport}] tools/list", flush=True)
    tools = (await session.list_tools()).tools
    names = [t.name for t in tools]
    check(names == ["search_themes", "find_by_meaning", "fetch_evidence"], "tool names", names)
    by = {t.name: t for t in tools}
    st = by["search_themes"].input_schema
    check(st["properties"]["query"]["maxLength"] == 1000, "query maxLength", st)
    check(st["properties"]["limit"]["maximum"] == 10, "limit maximum", st)
    check(st["additionalProperties"] is False, "no extra fields", st)
    check(by["find_by_meaning"].input_schema["properties"]["sample"]["maximum"] == 50, "sample max", None)
    check(by["fetch_evidence"].input_schema["properties"]["ids"]["maxItems"] == 20, "ids max", None)

    print(f"[{transport}] search_themes (valid)", flush=True)
    r = await call(session, "search_themes", {"query": QUESTION, "limit": 10, "support_limit": 2})
    s = r.structured_content
    check(not r.is_error, "search_themes succeeds", text_of(r))
    check(s["status"] == "ok", "status ok", s["status"])
    check(s["index_state"] == "ready" and s["run_id"], "index ready with a run id", s)
    check(1 <= len(s["themes"]) <= 3, "MCP_MAX_HITS=3 caps the themes", len(s["themes"]))
    check("capped at 3 by MCP_MAX_HITS" in text_of(r), "the cap is stated", text_of(r))
    for t in s["themes"]:
        check(set(t) >= {"theme_id", "level", "score", "entities", "passages"}, "theme fields", t)
        check(1 <= len(t["passages"]) <= 2, "support_limit respected", t["passages"])
        check(len(t["entities"]) <= 5, "at most five members", t["entities"])
    scores = [t["score"] for t in s["themes"]]
    check(scores == sorted(scores, reverse=True), "best first", scores)
    check(text_of(r).startswith("status: ok"), "text rendering", text_of(r))
    ids = [p["evidence_id"] for t in s["themes"] for p in t["passages"]]

    print(f"[{transport}] fetch_evidence (valid)", flush=True)
    r = await call(session, "fetch_evidence", {"ids": ids[:3] + ["pmid:0#0"]})
    ev = r.structured_content["evidence"]
    check([e["status"] for e in ev] == ["found"] * len(ids[:3]) + ["unknown"], "evidence statuses", ev)
    check(all(e["text"] for e in ev[:-1]), "found evidence carries text", ev)
    check(ev[0]["text"][:40] in text_of(r), "text rendering holds the passage", text_of(r))

    print(f"[{transport}] find_by_meaning (valid)", flush=True)
    r = await call(session, "find_by_meaning", {"term": "myocardial infarction", "sample": 3, "query": "statin"})
    s = r.structured_content
    check(s["status"] == "ok" and s["searched"], "concept search ran", s.get("status"))
    check(s["total"] >= 1 and 1 <= len(s["sample"]) <= 3, "count and sample", (s["total"], len(s["sample"])))
    check(s["direction"] == "forward" and "upwards" in s["direction_text"], "direction stated", s["direction_text"])
    check("linked to any concept" in s["coverage_text"], "coverage stated", s["coverage_text"])
    r = await call(session, "find_by_meaning", {"term": "no such term zzz"})
    check(r.structured_content["status"] == "unknown_term", "unknown term", r.structured_content["status"])
    check("Nothing was searched" in text_of(r), "unknown term says nothing was searched", text_of(r))
    r = await call(session, "find_by_meaning", {"concept": "D009203", "node_field": "mesh", "relation": "subclass_of"})
    check(r.structured_content["status"] in ("ok", "no_match"), "concept id with node_field", r.structured_content["status"])

    print(f"[{transport}] invalid arguments", flush=True)
    await expect_invalid(session, "search_themes", {"query": "", "limit": 0, "support_limit": 11, "bogus": 1},
                         ["query", "limit", "support_limit", "bogus"])
    t = await expect_invalid(session, "search_themes", {"query": QUESTION, "limit": 10**12}, ["limit"])
    check("got 1000000000000" in t, "limit 10^12 named with its value", t)
    await expect_invalid(session, "search_themes", {"query": QUESTION, "limit": "5", "support_limit": 2.5},
                         ["limit", "support_limit"])
    await expect_invalid(session, "search_themes", {"query": ["a", {"b": None}]}, ["query"])
    t = await expect_invalid(session, "search_themes", {"query": "x" * (1 << 20)}, ["query"])
    check("got 1048576 characters" in t, "1 MB query rejected by length", t)
    await expect_invalid(session, "find_by_meaning", {"concept": "D009203", "term": "heart attack"}, ["term"])
    await expect_invalid(session, "find_by_meaning", {"sample": 0}, ["sample", "concept"])
    await expect_invalid(session, "fetch_evidence", {"ids": ["x"] * 21}, ["ids"])
    await expect_invalid(session, "fetch_evidence", {"ids": "pmid:1#0"}, ["ids"])
    await expect_invalid(session, "fetch_evidence", {}, ["ids"])
    nested = 1
    for _ in range(60):
        nested = {"a": [nested]}
    await expect_invalid(session, "fetch_evidence", {"ids": nested}, ["ids"])

    print(f"[{transport}] unknown tool", flush=True)
    try:
        await call(session, "drop_database", {"really": True})
        check(False, "an unknown tool raises")
    except MCPError as e:
        check(e.code == -32602 and "Unknown tool `drop_database`" in e.message, "unknown tool error", (e.code, e.message))

    print(f"[{transport}] 50 concurrent calls", flush=True)
    jobs = []
    for i in range(50):
        if i % 5 == 0:
            jobs.append(call(session, "search_themes", {"query": "", "limit": 99}))
        elif i % 5 == 1:
            jobs.append(call(session, "find_by_meaning", {"term": "myocardial infarction", "sample": 1}))
        elif i % 5 == 2:
            jobs.append(call(session, "fetch_evidence", {"ids": ids[:1]}))
        else:
            jobs.append(call(session, "search_themes", {"query": f"{QUESTION} {i}", "limit": 2}))
    results = await asyncio.gather(*jobs)
    for i, r in enumerate(results):
        if i % 5 == 0:
            check(r.is_error and text_of(r).startswith("Invalid arguments."), f"concurrent {i}", text_of(r))
        else:
            check(not r.is_error, f"concurrent {i} succeeds", text_of(r))
        if i % 5 >= 3:
            check(r.structured_content["status"] == "ok", f"concurrent {i} status", r.structured_content["status"])

    print(f"[{transport}] still serving", flush=True)
    r = await call(session, "fetch_evidence", {"ids": ids[:1]})
    check(r.structured_content["evidence"][0]["status"] == "found", "still serving", r.structured_content)


async def scope_scenario(binary, root):
    """MCP_SCOPE limits every tool; no call can widen it."""
    print("[stdio] MCP_SCOPE", flush=True)
    with tempfile.TemporaryDirectory() as d:
        async with over_stdio(binary, root) as session:
            await session.initialize()
            r = await call(session, "search_themes", {"query": QUESTION, "limit": 1, "support_limit": 1})
            theme = r.structured_content["themes"][0]
            inside = theme["passages"][0]
        keys = os.path.join(d, "keys.txt")
        with open(keys, "w") as f:
            f.write(f"# one document\n{inside['document_key']}\n")
        async with over_stdio(binary, root, {"MCP_SCOPE": keys}) as session:
            await session.initialize()
            r = await call(session, "search_themes", {"query": QUESTION, "limit": 5, "support_limit": 10})
            s = r.structured_content
            check(s["status"] in ("ok", "no_match"), "scoped search", s["status"])
            for t in s["themes"]:
                for p in t["passages"]:
                    check(p["document_key"] == inside["document_key"], "only in-scope passages", p)
            r = await call(session, "fetch_evidence", {"ids": [inside["evidence_id"], "pmid:28056802#0"]})
            ev = r.structured_content["evidence"]
            check(ev[0]["status"] == "found", "in-scope evidence found", ev[0])
            if inside["document_key"] != "pmid:28056802":
                check(ev[1]["status"] == "unknown" and ev[1]["text"] is None, "out-of-scope evidence hidden", ev[1])
            await expect_invalid(session, "search_themes", {"query": QUESTION, "scope": "all"}, ["scope"])
    print("[stdio] a missing MCP_SCOPE file stops the server", flush=True)
    p = subprocess.run(
        [binary, "serve", "--root", root],
        env={**os.environ, "MCP_SCOPE": "/nonexistent/keys.txt"},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    check(p.returncode == 2 and "MCP_SCOPE" in p.stderr, "exit 2 naming MCP_SCOPE", (p.returncode, p.stderr))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    env = {"MCP_MAX_HITS": "3"}
    async with over_stdio(a.binary, a.root, env) as session:
        await scenario(session, "stdio")
    async with over_http(a.binary, a.root, env) as session:
        await scenario(session, "http")
        await hostile_http(session)
    await asyncio.wait_for(scope_scenario(a.binary, a.root), 300)
    print("MCP client: all checks passed (stdio and streamable HTTP)")


if __name__ == "__main__":
    asyncio.run(main())
