"""The Python API over the shipped corpus's run: the contract's example, argument errors, every
status, scopes, live visibility across threads, the timeout, asyncio, vector stores and the
agent tools."""

import asyncio
import datetime
import os
import threading

import numpy as np
import pytest

import agrag
from agrag.evidence import (
    fetch_evidence,
    fetch_evidence_sync,
    find_by_meaning,
    find_by_meaning_sync,
    search_themes,
    search_themes_sync,
)

QUESTION = "Do statins reduce mortality after myocardial infarction?"


@pytest.fixture()
def store(shipped_root):
    return agrag.open_store(shipped_root)


def test_the_readme_example_script_runs_from_the_repository_root(shipped_root):
    """`python python/examples/themes.py` from the checkout, as the README says: the installed
    package is imported (a script beside the source folder `python/agrag` would shadow it)."""
    import subprocess
    import sys

    from conftest import REPO

    done = subprocess.run(
        [sys.executable, "python/examples/themes.py"],
        cwd=REPO,
        env=dict(os.environ, AGRAG_ROOT=str(shipped_root)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ok False ready", done.stdout
    assert any(line.startswith("    pmid:") or "#" in line for line in lines[1:]), done.stdout


def test_the_contracts_example_prints_real_themes(store, capsys):
    from agrag.evidence.themes import search_themes as contract_search_themes

    assert contract_search_themes is search_themes
    embedder = store.embedder()
    scope = agrag.Scope.all()

    async def main():
        themes = await search_themes(
            store, embedder, "How is customer data handled?", scope=scope, limit=3, support_limit=2
        )
        print(themes.status.value, themes.truncated, themes.index_state)
        for theme in themes.themes:
            print(f"{theme.score:.4f}  {theme.theme_id}  {theme.entities}")
            for passage in theme.passages:
                print("   ", passage.evidence_id)
        return themes

    themes = asyncio.run(main())
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[0] in {"ok", "no_match"}
    assert themes.index_state == "ready"
    # The medical question of the README finds real themes with real passages.
    answer = search_themes_sync(store, embedder, QUESTION, scope, limit=3, support_limit=2)
    assert answer.status is agrag.Status.OK and answer.status.value == "ok"
    assert 1 <= len(answer.themes) <= 3
    assert answer.run_id == store.run_id
    for theme in answer.themes:
        assert 1 <= len(theme.passages) <= 2
        assert theme.entities and all(isinstance(e, str) for e in theme.entities)
        for p in theme.passages:
            assert p.evidence_id.startswith(p.document_key + "#")
            assert p.location.position >= 0
    scores = [t.score for t in answer.themes]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("field,kwargs", [
    ("limit", {"limit": 0}),
    ("limit", {"limit": -1}),
    ("support_limit", {"support_limit": 0}),
])
def test_non_positive_limits_raise_value_error_naming_the_argument(store, field, kwargs):
    with pytest.raises(ValueError, match=f"^{field}"):
        search_themes_sync(store, None, QUESTION, None, **kwargs)
    with pytest.raises(ValueError, match=f"^{field}"):
        asyncio.run(search_themes(store, None, QUESTION, None, **kwargs))


@pytest.mark.parametrize("kwargs,field", [
    ({"query": ""}, "query"),
    ({"query": 3}, "query"),
    ({"query": np.zeros(3, dtype=np.float64)}, "query"),
    ({"scope": ["pmid:1"]}, "scope"),
    ({"timeout": 0}, "timeout"),
    ({"timeout": -1.5}, "timeout"),
    ({"timeout": float("nan")}, "timeout"),
    ({"settings": {"MCP_NOPE": "1"}}, "settings"),
    ({"settings": {"MCP_MAX_HITS": "0"}}, "MCP_MAX_HITS"),
    ({"embedder": "hash"}, "embedder"),
    ({"vector_store": object()}, "vector_store"),
    ({"limit": "3"}, "^limit: must be an int, got str"),
    ({"limit": 3.0}, "^limit: must be an int, got float"),
    ({"limit": True}, "^limit: must be an int, got a bool"),
    ({"limit": 10**30}, "^limit: 10+ is out of range"),
    ({"support_limit": -(10**30)}, "^support_limit: -10+ is out of range"),
    ({"settings": {"AGRAG_ROOT": "/elsewhere"}}, "^settings: unknown setting \"AGRAG_ROOT\""),
    ({"query": "\ud800 statins"}, "^query: is not valid Unicode"),
    ({"query": "statins " * 200}, "^query: must be at most 1000 characters, got 1600"),
])
def test_bad_arguments_raise_value_error_naming_them(store, kwargs, field):
    args = {"query": QUESTION, **kwargs}
    query = args.pop("query")
    embedder = args.pop("embedder", None)
    with pytest.raises(ValueError, match=field):
        search_themes_sync(store, embedder, query, **args)


def test_every_status_is_reached(store, tmp_path):
    ok = search_themes_sync(store, None, QUESTION)
    assert ok.status is agrag.Status.OK
    # Nothing the hashing embedder reads: the zero vector is no match, not the first themes.
    none = search_themes_sync(store, None, "?! …")
    assert none.status is agrag.Status.NO_MATCH and none.themes == []
    empty = search_themes_sync(store, None, QUESTION, agrag.Scope([]))
    assert empty.status is agrag.Status.EMPTY_SCOPE and empty.index_state is None
    not_ready = search_themes_sync(agrag.open_store(tmp_path / "nothing"), None, QUESTION)
    assert not_ready.status is agrag.Status.INDEX_NOT_READY
    assert not_ready.index_state is agrag.IndexState.NOT_READY and not_ready.run_id is None
    assert ok.index_state is agrag.IndexState.READY and ok.index_state == "ready"
    # An embedder of another space: failed, naming both, never an exception.
    failed = search_themes_sync(store, agrag.Embedder.hash(dim=7), QUESTION)
    assert failed.status is agrag.Status.FAILED
    assert [f.leg for f in failed.failures] == ["embed"]
    assert "dim 7" in failed.failures[0].message and "dim 384" in failed.failures[0].message
    text_for_vectors = search_themes_sync(
        store, agrag.Embedder.precomputed("agrag-hash-v2", 384), QUESTION
    )
    assert text_for_vectors.status is agrag.Status.FAILED


def test_a_one_document_scope_reads_only_that_document(store):
    key = search_themes_sync(store, None, QUESTION).themes[0].passages[0].document_key
    answer = search_themes_sync(store, None, QUESTION, agrag.Scope([key]), limit=5, support_limit=10)
    assert answer.status is agrag.Status.OK
    assert {p.document_key for t in answer.themes for p in t.passages} == {key}


def test_a_vector_query_answers_as_its_text(store):
    embedder = store.embedder()
    vector = embedder.embed(QUESTION)
    assert vector.dtype == np.float32 and vector.shape == (embedder.dim,)
    by_text = search_themes_sync(store, embedder, QUESTION)
    by_vector = search_themes_sync(store, embedder, vector)
    assert [t.theme_id for t in by_vector.themes] == [t.theme_id for t in by_text.themes]
    assert by_vector.status is agrag.Status.OK
    # A vector of another length is a bad argument, named, whoever's space it was meant for.
    with pytest.raises(ValueError, match="^query: has 5 components; the served run's vectors have 384"):
        search_themes_sync(store, None, np.ones(5, dtype=np.float32))
    with pytest.raises(ValueError, match="^query: has 384 components; the embedder's vectors have 7"):
        search_themes_sync(store, agrag.Embedder.precomputed("m", 7), vector)
    with pytest.raises(ValueError, match="^vector: has 5"):
        find_by_meaning_sync(store, None, "Stroke", vector=np.ones(5, dtype=np.float32))


def test_a_hidden_passage_is_gone_from_the_next_answer_while_another_thread_queries(root_copy):
    store = agrag.open_store(root_copy)
    first = search_themes_sync(store, None, QUESTION, support_limit=10)
    target = first.themes[0].passages[0].evidence_id
    stop = threading.Event()
    seen_after = []
    errors = []
    hidden = threading.Event()

    def query_loop():
        try:
            while not stop.is_set():
                was_hidden = hidden.is_set()
                answer = search_themes_sync(store, None, QUESTION, support_limit=10)
                ids = {p.evidence_id for t in answer.themes for p in t.passages}
                if was_hidden:
                    seen_after.append(target in ids)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    worker = threading.Thread(target=query_loop)
    worker.start()
    try:
        # Set through the Python API from this thread while the worker searches.
        other = agrag.open_store(root_copy)
        other.set_visibility(target, "hidden", reason="test")
        hidden.set()
        answer = search_themes_sync(store, None, QUESTION, support_limit=10)
        assert target not in {p.evidence_id for t in answer.themes for p in t.passages}
        assert store.visibility(target) == "hidden"
        [evidence] = fetch_evidence_sync(store, [target])
        assert evidence.status == "not_visible" and evidence.text is None
        while len(seen_after) < 3 and worker.is_alive():
            threading.Event().wait(0.01)
    finally:
        stop.set()
        worker.join()
    assert not errors
    assert seen_after and not any(seen_after)
    other.set_visibility(target, "visible")
    assert target in {
        p.evidence_id
        for t in search_themes_sync(store, None, QUESTION, support_limit=10).themes
        for p in t.passages
    }


@pytest.mark.parametrize("timeout", [1e-9, datetime.timedelta(microseconds=1)])
def test_a_passed_deadline_answers_failed_with_a_timeout_leg(store, timeout):
    answer = search_themes_sync(store, None, QUESTION, timeout=timeout)
    assert answer.status is agrag.Status.FAILED
    assert answer.themes == []
    assert [f.leg for f in answer.failures] == ["timeout"]
    relaxed = search_themes_sync(store, None, QUESTION, timeout=datetime.timedelta(seconds=60))
    assert relaxed.status is agrag.Status.OK
    concept = find_by_meaning_sync(store, None, "Stroke", timeout=timeout)
    assert concept.status is agrag.ConceptStatus.FAILED
    assert [f.leg for f in concept.failures] == ["timeout"]
    # MCP_TIMEOUT in the settings is the same deadline.
    by_setting = search_themes_sync(store, None, QUESTION, settings={"MCP_TIMEOUT": "1e-9"})
    assert [f.leg for f in by_setting.failures] == ["timeout"]


def test_fifty_gathered_calls_answer_as_one_does(store):
    expected = [t.theme_id for t in search_themes_sync(store, None, QUESTION).themes]

    async def main():
        return await asyncio.gather(*(search_themes(store, None, QUESTION) for _ in range(50)))

    answers = asyncio.run(main())
    assert len(answers) == 50
    assert all([t.theme_id for t in a.themes] == expected for a in answers)


class ListStore:
    """A vector store answering fixed hits, recording what it was asked."""

    def __init__(self, hits):
        self.hits = hits
        self.asked = []

    def search(self, vector, k):
        self.asked.append((vector.dtype, vector.shape, k))
        return self.hits


def test_a_callers_vector_store_gives_the_candidate_window(store):
    own = search_themes_sync(store, None, QUESTION, limit=3)
    ids = [t.theme_id for t in own.themes]
    vs = ListStore([(ids[-1], 0.9), (ids[0], 0.1)])
    answer = search_themes_sync(store, None, QUESTION, limit=3, vector_store=vs)
    assert vs.asked == [(np.float32, (384,), 9)]
    assert answer.status is agrag.Status.OK
    assert [t.theme_id for t in answer.themes] == [ids[-1], ids[0]]
    assert [round(t.score, 4) for t in answer.themes] == [0.9, 0.1]
    unknown = search_themes_sync(store, None, QUESTION, vector_store=ListStore([(10**6, 1.0)]))
    assert unknown.status is agrag.Status.FAILED and unknown.failures[0].leg == "vector_store"

    class Broken:
        def search(self, vector, k):
            raise ConnectionError("vector store is down")

    broken = search_themes_sync(store, None, QUESTION, vector_store=Broken())
    assert broken.status is agrag.Status.FAILED
    assert "vector store is down" in broken.failures[0].message
    junk = search_themes_sync(store, None, QUESTION, vector_store=ListStore([("a", "b")]))
    assert junk.failures[0].leg == "vector_store"


def test_settings_cap_the_limit_and_narrow_the_scope(store, tmp_path):
    capped = search_themes_sync(store, None, QUESTION, limit=5, settings={"MCP_MAX_HITS": "1"})
    assert len(capped.themes) == 1
    key = capped.themes[0].passages[0].document_key
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# one document\n{key}\n")
    narrowed = search_themes_sync(store, None, QUESTION, settings={"MCP_SCOPE": str(keys)})
    assert {p.document_key for t in narrowed.themes for p in t.passages} == {key}
    hashed = search_themes_sync(store, None, QUESTION, settings={"EMBEDDING_PROVIDER": "hash"})
    assert hashed.status is agrag.Status.OK


def test_fetch_evidence_answers_each_id_in_order(store):
    ev = search_themes_sync(store, None, QUESTION).themes[0].passages[0].evidence_id
    found, unknown = fetch_evidence_sync(store, [ev, "pmid:0#99"])
    assert found.status == "found" and found.text and found.location.position >= 0
    assert found.evidence_id == ev and found.document_key == ev.split("#")[0]
    assert unknown.status == "unknown" and unknown.text is None
    [again] = asyncio.run(fetch_evidence(store, [ev]))
    assert again.text == found.text
    with pytest.raises(ValueError, match="ids"):
        fetch_evidence_sync(store, ev)


def test_find_by_meaning_by_term_and_by_concept(store):
    stroke = find_by_meaning_sync(store, None, "Stroke")
    assert stroke.status is agrag.ConceptStatus.OK and stroke.total > 0
    assert stroke.resolved and stroke.sample
    concept_id = stroke.resolved[0][0]
    by_id = asyncio.run(find_by_meaning(store, None, concept=concept_id))
    assert by_id.total == stroke.total
    assert stroke.to_dict()["total"] == stroke.total
    unknown = find_by_meaning_sync(store, None, "no such heading at all")
    assert unknown.status is agrag.ConceptStatus.UNKNOWN_TERM
    by_vector = find_by_meaning_sync(store, store.embedder(), "Stroke", vector="stroke risk")
    assert by_vector.status in (agrag.ConceptStatus.OK, agrag.ConceptStatus.NO_MATCH)
    assert by_vector.to_dict()["ranked_by"]
    mismatched = find_by_meaning_sync(store, agrag.Embedder.hash(dim=7), "Stroke", vector="stroke")
    assert mismatched.status is agrag.ConceptStatus.FAILED
    assert [f.leg for f in mismatched.failures] == ["embed"]
    with pytest.raises(ValueError, match="sample"):
        find_by_meaning_sync(store, None, "Stroke", sample=0)
    with pytest.raises(ValueError, match="term"):
        find_by_meaning_sync(store, None, "Stroke", concept=concept_id)


def test_agent_tools_never_raise_and_name_bad_fields(store):
    tools = agrag.agent.tools(store, agrag.Scope.all())
    names = [s["name"] for s in tools.specs]
    assert {"search_themes", "find_by_meaning", "fetch_evidence"} <= set(names)
    assert all(s["input_schema"]["type"] == "object" for s in tools.specs)
    bad = tools.call("search_themes", {"query": "", "limit": 99})
    assert bad["is_error"] and bad["rejected"] and bad["text"].startswith("Invalid arguments.")
    assert "`query`" in bad["text"] and "`limit`" in bad["text"]
    not_json = tools.call("search_themes", "{not json")
    assert not_json["text"].startswith("Invalid arguments.") and "`arguments`" in not_json["text"]
    odd = tools.call("search_themes", {"query": object()})
    assert odd["is_error"]
    unknown = tools.call("no_such_tool", {})
    assert unknown["is_error"] and unknown["structured"]["error"] == "unknown_tool"
    good = tools.call("search_themes", {"query": QUESTION})
    assert not good["is_error"] and good["structured"]["status"] == "ok"
    assert tools.partial_retrieval is False
    timed = agrag.agent.tools(store, settings={"MCP_TIMEOUT": "1e-9"})
    out = timed.call("search_themes", {"query": QUESTION})
    assert out["structured"]["status"] == "failed" and timed.partial_retrieval is True


def test_a_damaged_run_raises_index_corrupt_error(root_copy):
    run_id = (root_copy / "LATEST").read_text().strip()
    run = root_copy / "runs" / run_id
    victim = sorted(run.glob("*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(agrag.IndexCorruptError, match=victim.name) as info:
        agrag.open_store(root_copy)
    assert isinstance(info.value, RuntimeError)


def test_classes_are_frozen_and_print_themselves(store):
    answer = search_themes_sync(store, None, QUESTION)
    with pytest.raises(AttributeError):
        answer.truncated = True
    with pytest.raises(AttributeError):
        answer.themes[0].score = 1.0
    assert repr(answer).startswith("ThemeResult(status=\"ok\"")
    assert repr(answer.themes[0]).startswith("Theme(theme_id=")
    assert repr(agrag.Scope.all()) == "Scope.all()"
    assert repr(store).startswith("Store(root=")
    assert repr(agrag.Embedder.hash()) == 'Embedder(model="agrag-hash-v2", dim=384)'
    assert agrag.Scope(["a"]) == agrag.Scope(["a"])
    assert store.reload() is False


def test_the_minilm_embedder_loads_when_the_model_is_there():
    path = os.environ.get("EMBEDDING_MODEL_PATH")
    if not path or not os.path.exists(os.path.join(path, "model.safetensors")):
        if os.environ.get("AGRAG_REQUIRE_MODEL") == "1":
            pytest.fail("AGRAG_REQUIRE_MODEL=1 but EMBEDDING_MODEL_PATH has no model")
        pytest.skip("all-MiniLM-L6-v2 is not here (bash scripts/fetch-model.sh)")
    e = agrag.Embedder.minilm(path)
    # Without a path, EMBEDDING_MODEL_PATH names the folder, as for open_store.
    assert agrag.Embedder.minilm().fingerprint == e.fingerprint
    v = e.embed(QUESTION)
    assert e.dim == 384 and v.shape == (384,) and abs(float(np.dot(v, v)) - 1.0) < 1e-4
    with pytest.raises(RuntimeError):
        agrag.Embedder.minilm("/nonexistent/model")


@pytest.mark.parametrize("call,field", [
    (lambda: agrag.Embedder.hash(10**9), "^dim: invalid \"1000000000\": expected an integer from 1 to 65536"),
    (lambda: agrag.Embedder.hash(10**30), "^dim: 10+ is out of range"),
    (lambda: agrag.Embedder.hash(0), "^dim: must be an integer ≥ 1"),
    (lambda: agrag.Embedder.hash("384"), "^dim: must be an int, got str"),
    (lambda: agrag.Embedder.precomputed("m", 70000), "^dim: invalid \"70000\""),
    (lambda: agrag.Embedder.precomputed("m", None), "^dim: must be given"),
    (lambda: agrag.Embedder.precomputed("m", -1), "^dim: invalid \"-1\""),
    (lambda: agrag.Embedder.precomputed(None, 3), "^model: must be a str, got NoneType"),
    (lambda: agrag.Embedder.minilm(5), "^path: must be a str or os.PathLike, got int"),
    (lambda: agrag.Embedder.hash(384).embed(None), "^text: must be a str, got NoneType"),
    (lambda: agrag.Embedder.hash(384).embed("\ud800"), "^text: is not valid Unicode"),
    (lambda: agrag.open_store(5), "^root: must be a str or os.PathLike, got int"),
    (lambda: agrag.open_store(b"/tmp"), "^root: must be a str or os.PathLike, got bytes"),
    (lambda: agrag.open_store(""), "^root: must not be empty"),
    (lambda: agrag.Scope(["\ud800"]), "^document_keys\\[0\\]: is not valid Unicode"),
    (lambda: agrag.Scope("pmid:1"), "^document_keys: must be a list of str, not one str"),
    (lambda: agrag.Scope(["pmid:1", 2]), "^document_keys: item 1 is int, not a str"),
    (lambda: agrag.Scope(5), "^document_keys: must be a list of str, got int"),
    (lambda: agrag.open_store(settings={"MCP_MAX_HIT": "3"}), "^settings: unknown setting \"MCP_MAX_HIT\""),
    (lambda: agrag.open_store(settings=["MCP_MAX_HITS"]), "^settings: must be a dict or another mapping, got list"),
    (lambda: agrag.open_store(settings={"MCP_TIMEOUT": "\ud800"}), "^settings\\[\"MCP_TIMEOUT\"\\]: is not valid Unicode"),
])
def test_bad_constructor_arguments_raise_value_error_naming_them(call, field):
    with pytest.raises(ValueError, match=field):
        call()


def test_find_by_meaning_checks_every_argument_whether_it_is_used_or_not(store):
    for kwargs, field in [
        ({"vector_k": 0}, "^vector_k: must be an integer ≥ 1, got 0"),
        ({"keyword_weight": float("nan")}, "^keyword_weight: must be a number in \\[0, 1\\]"),
        ({"keyword_weight": 1.5}, "^keyword_weight"),
        ({"keyword_weight": "0.5"}, "^keyword_weight: must be a number, got str"),
        ({"depth": 0}, "^depth"),
        ({"sample": "10"}, "^sample: must be an int, got str"),
        ({"combine": None, "direction": 3}, "^direction: must be a str, got int"),
        ({"node_field": b"concept"}, "^node_field: must be a str, got bytes"),
        ({"relation": 1}, "^relation: must be a str, got int"),
        ({"keyword": "\ud800"}, "^keyword: is not valid Unicode"),
        ({"query": 5}, "^query: must be a str, got int"),
        ({"vector": "statins " * 200}, "^vector: must be at most 1000 characters"),
    ]:
        with pytest.raises(ValueError, match=field):
            find_by_meaning_sync(store, None, "Stroke", **kwargs)


def test_scopes_are_values(store):
    assert {agrag.Scope(["a", "b"]), agrag.Scope(["a", "b"]), agrag.Scope.all()} == {
        agrag.Scope(["a", "b"]),
        agrag.Scope.all(),
    }
    assert agrag.Scope(k for k in ("a", "b")) == agrag.Scope(("a", "b"))


def test_open_stores_settings_apply_to_every_call(shipped_root, tmp_path):
    capped = agrag.open_store(shipped_root, settings={"MCP_MAX_HITS": 1})
    assert len(search_themes_sync(capped, None, QUESTION, limit=5).themes) == 1
    # A call's own settings override the store's key by key: its MCP_SCOPE leaves the cap.
    key = search_themes_sync(capped, None, QUESTION).themes[0].passages[0].document_key
    keys = tmp_path / "keys.txt"
    keys.write_text(key + "\n")
    narrowed = search_themes_sync(capped, None, QUESTION, limit=5, settings={"MCP_SCOPE": str(keys)})
    assert len(narrowed.themes) == 1
    assert {p.document_key for p in narrowed.themes[0].passages} == {key}
    assert len(search_themes_sync(capped, None, QUESTION, settings={"MCP_MAX_HITS": "3"}).themes) == 3
    timed = agrag.open_store(shipped_root, settings={"MCP_TIMEOUT": "1e-9"})
    answer = search_themes_sync(timed, None, QUESTION)
    assert [f.leg for f in answer.failures] == ["timeout"]
    assert find_by_meaning_sync(timed, None, "Stroke").status is agrag.ConceptStatus.FAILED
    # Without MCP_MAX_HITS anywhere, a caller's limit is not capped at the MCP server's 10.
    if "MCP_MAX_HITS" not in os.environ:
        plain = agrag.open_store(shipped_root)
        assert len(search_themes_sync(plain, None, QUESTION, limit=12).themes) == 12


def test_setting_visibility_under_a_missing_root_creates_nothing(tmp_path):
    missing = tmp_path / "no" / "such" / "root"
    store = agrag.open_store(missing)
    # With no run served the id cannot be checked: refused unless asked for.
    with pytest.raises(ValueError, match="^key: no run is served"):
        store.set_visibility("pmid:1#0", "hidden")
    with pytest.raises(RuntimeError, match="snapshot root does not exist"):
        store.set_visibility("pmid:1#0", "hidden", allow_unknown=True)
    assert not (tmp_path / "no").exists()
    assert store.visibility("pmid:1#0") == "visible"


@pytest.mark.parametrize("latest", ["garbage\n", "../../etc\n", ""])
def test_a_latest_that_names_no_run_raises_index_corrupt_error(root_copy, latest):
    (root_copy / "LATEST").write_text(latest)
    with pytest.raises(agrag.IndexCorruptError, match="LATEST"):
        agrag.open_store(root_copy)


def test_a_latest_naming_a_missing_run_raises_index_corrupt_error(root_copy):
    (root_copy / "LATEST").write_text("20260101T000000Z-0000000000000000\n")
    with pytest.raises(agrag.IndexCorruptError):
        agrag.open_store(root_copy)


def test_a_keyboard_interrupt_in_a_vector_store_reaches_the_caller(store):
    class Interrupted:
        def search(self, vector, k):
            raise KeyboardInterrupt

    for timeout in (None, 60):
        with pytest.raises(KeyboardInterrupt):
            search_themes_sync(store, None, QUESTION, vector_store=Interrupted(), timeout=timeout)


def test_the_deadline_bounds_a_slow_vector_store(store):
    release = threading.Event()

    class Slow:
        def __init__(self):
            self.finished = False

        def search(self, vector, k):
            release.wait(60)  # until the test has its answer
            self.finished = True
            return []

    slow = Slow()
    try:
        answer = search_themes_sync(store, None, QUESTION, vector_store=slow, timeout=0.2)
        # The answer came while the store was still searching: the deadline, not the store,
        # ended the call.
        assert not slow.finished
        assert answer.status is agrag.Status.FAILED and answer.themes == []
        assert [f.leg for f in answer.failures] == ["timeout"]
        assert "vector store" in answer.failures[0].message
    finally:
        release.set()
    # A store within the deadline answers as without one.
    quick = search_themes_sync(store, None, QUESTION, vector_store=ListStore([]), timeout=60)
    assert quick.status is agrag.Status.NO_MATCH


@pytest.mark.parametrize("name", [None, 3, b"search_themes", ["search_themes"]])
def test_agent_tools_answer_a_name_that_is_not_a_str(store, name):
    out = agrag.agent.tools(store).call(name, {})
    assert out["is_error"] and out["rejected"]
    assert out["structured"]["error"] == "unknown_tool"


def test_str_arguments_that_are_not_str_raise_value_error_naming_them(store):
    for call, field in [
        (lambda: find_by_meaning_sync(store, None, 5), "^term: must be a str, got int"),
        (lambda: find_by_meaning_sync(store, None, concept=None), "^term: give exactly one"),
        (lambda: store.set_visibility(None, "hidden"), "^key: must be a str, got NoneType"),
        (lambda: store.set_visibility("x", 1), "^state: must be a str, got int"),
        (lambda: store.set_visibility("x", "hidden", target=2), "^target: must be a str, got int"),
        (lambda: store.set_visibility("x", "hidden", reason=3), "^reason: must be a str, got int"),
        (lambda: store.visibility(None), "^key: must be a str, got NoneType"),
        (lambda: fetch_evidence_sync(store, None), "^ids: must be a list of str, got NoneType"),
        (lambda: fetch_evidence_sync(store, [None]), "^ids: item 0 is NoneType, not a str"),
        (lambda: fetch_evidence_sync(store, "pmid:1#0"), "^ids: must be a list of str, not one str"),
        (lambda: search_themes_sync(None, None, QUESTION), "^store: must be an agrag.Store"),
        (lambda: agrag.agent.tools(None), "^store: must be an agrag.Store"),
        (lambda: agrag.agent.tools(store, None, "x"), "^settings: must be a dict or another mapping, got str"),
        (lambda: store.set_visibility("x", "hidden", allow_unknown="yes"), "^allow_unknown: must be a bool, got str"),
        (lambda: agrag.open_store("/tmp/a\x00b"), "^root: must not contain a NUL character"),
        (lambda: agrag.Embedder.minilm("/x\x00y"), "^path: must not contain a NUL character"),
        (lambda: agrag.open_store("/etc/passwd"), "^root: /etc/passwd is a file"),
        (lambda: agrag.Scope(b"pmid:1"), "^document_keys: must be a list of str, got bytes"),
        (lambda: store.visibility(""), "^key: must not be empty"),
        (lambda: find_by_meaning_sync(store, None, "Stroke", query=""), "^query: must not be empty"),
        (lambda: find_by_meaning_sync(store, None, "Stroke", query="heart " * 200), "^query: must be at most 1000"),
        (lambda: find_by_meaning_sync(store, None, "Stroke", keyword="heart " * 200), "^keyword: must be at most 1000"),
    ]:
        with pytest.raises(ValueError, match=field):
            call()


def test_a_huge_timeout_or_sample_answers_instead_of_panicking(store, shipped_root):
    assert search_themes_sync(store, None, QUESTION, timeout=1e19).status is agrag.Status.OK
    far = agrag.open_store(shipped_root, settings={"MCP_TIMEOUT": "1e19"})
    assert search_themes_sync(far, None, QUESTION).status is agrag.Status.OK
    assert find_by_meaning_sync(far, None, "Stroke").status is agrag.ConceptStatus.OK
    big = find_by_meaning_sync(store, None, "Stroke", sample=2**62)
    assert big.status is agrag.ConceptStatus.OK and len(big.sample) == big.total


def test_setting_visibility_of_an_id_the_run_lacks_needs_allow_unknown(root_copy):
    store = agrag.open_store(root_copy)
    with pytest.raises(ValueError, match="^key: the served run .* has no passage \"pmid:1#99\""):
        store.set_visibility("pmid:1#99", "hidden")
    assert store.visibility("pmid:1#99") == "visible"
    store.set_visibility("pmid:1#99", "hidden", allow_unknown=True)
    assert store.visibility("pmid:1#99") == "hidden"
    with pytest.raises(ValueError, match="^key: the served run .* has no document \"pmid:0\""):
        store.set_visibility("pmid:0", "hidden", target="document")


@pytest.mark.parametrize("latest", [b"\xff\xfe\n", None])
def test_a_latest_that_is_not_text_raises_index_corrupt_error(root_copy, latest):
    path = root_copy / "LATEST"
    if latest is None:
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(latest)
    with pytest.raises(agrag.IndexCorruptError, match="LATEST"):
        agrag.open_store(root_copy)


def test_settings_may_be_any_mapping(shipped_root):
    import types

    capped = agrag.open_store(shipped_root, settings=types.MappingProxyType({"MCP_MAX_HITS": "2"}))
    assert len(search_themes_sync(capped, None, QUESTION, limit=5).themes) == 2
    tools = agrag.agent.tools(capped, settings=types.MappingProxyType({"MCP_MAX_HITS": "1"}))
    out = tools.call("search_themes", {"query": QUESTION, "limit": 5})
    assert not out["is_error"], out


def test_an_interrupt_while_an_argument_is_read_reaches_the_caller(store):
    class Interrupting:
        def __index__(self):
            raise KeyboardInterrupt

        def __iter__(self):
            raise KeyboardInterrupt

        def __str__(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        search_themes_sync(store, None, QUESTION, limit=Interrupting())
    with pytest.raises(KeyboardInterrupt):
        agrag.Scope(Interrupting())
    with pytest.raises(KeyboardInterrupt):
        fetch_evidence_sync(store, Interrupting())
    with pytest.raises(KeyboardInterrupt):
        agrag.agent.tools(store).call(Interrupting(), {})


def test_agent_tools_answer_lone_surrogates(store):
    tools = agrag.agent.tools(store)
    out = tools.call("search_\ud800themes", {})
    assert out["is_error"] and out["structured"]["error"] == "unknown_tool"
    out = tools.call("search_themes", {"query": "\ud800"})
    assert out["is_error"] and out["rejected"]
    # In JSON text the surrogate is read as U+FFFD: a query like any other, answered.
    out = tools.call("search_themes", '{"query": "\ud800 statins"}')
    assert out["tool"] == "search_themes" and not out["rejected"], out


def test_a_vector_store_hit_with_a_bool_id_is_refused(store):
    answer = search_themes_sync(store, None, QUESTION, vector_store=ListStore([(True, 0.5)]))
    assert answer.status is agrag.Status.FAILED
    assert [f.leg for f in answer.failures] == ["vector_store"]


def test_minilm_without_a_path_reads_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_MODEL_PATH", str(tmp_path / "elsewhere"))
    with pytest.raises(RuntimeError, match="elsewhere"):
        agrag.Embedder.minilm()


def test_a_calls_scope_narrows_the_stores_and_never_widens_it(shipped_root, tmp_path):
    wide = agrag.open_store(shipped_root)
    key = search_themes_sync(wide, None, QUESTION).themes[0].passages[0].document_key
    keys = tmp_path / "keys.txt"
    keys.write_text(key + "\n")
    narrow = agrag.open_store(shipped_root, settings={"MCP_SCOPE": str(keys)})
    for settings in (None, {"MCP_SCOPE": "all"}):
        answer = search_themes_sync(narrow, None, QUESTION, settings=settings)
        assert {p.document_key for t in answer.themes for p in t.passages} == {key}, settings
        tools = agrag.agent.tools(narrow, settings=settings)
        out = tools.call("search_themes", {"query": QUESTION})
        got = {p["document_key"] for t in out["structured"]["themes"] for p in t["passages"]}
        assert got <= {key}, settings
    assert find_by_meaning_sync(wide, None, "Stroke").total > 1
    assert find_by_meaning_sync(narrow, None, "Stroke", settings={"MCP_SCOPE": "all"}).total <= 1


def test_fetch_evidence_keeps_to_the_scope(shipped_root, tmp_path):
    wide = agrag.open_store(shipped_root)
    themes = search_themes_sync(wide, None, QUESTION, support_limit=10).themes
    passages = [p for t in themes for p in t.passages]
    inside = passages[0]
    outside = next(p for p in passages if p.document_key != inside.document_key)
    keys = tmp_path / "keys.txt"
    keys.write_text(inside.document_key + "\n")
    narrow = agrag.open_store(shipped_root, settings={"MCP_SCOPE": str(keys)})
    got = fetch_evidence_sync(narrow, [inside.evidence_id, outside.evidence_id])
    assert [e.status for e in got] == ["found", "unknown"]
    assert got[1].text is None and got[1].document_key is None
    by_scope = fetch_evidence_sync(wide, [outside.evidence_id], agrag.Scope([inside.document_key]))
    assert by_scope[0].status == "unknown"
    assert asyncio.run(fetch_evidence(wide, [outside.evidence_id]))[0].status == "found"


def test_visibility_answers_the_state_queries_apply(root_copy):
    store = agrag.open_store(root_copy)
    passage = search_themes_sync(store, None, QUESTION).themes[0].passages[0]
    store.set_visibility(passage.document_key, "hidden", target="document")
    assert store.visibility(passage.evidence_id) == "hidden"
    assert fetch_evidence_sync(store, [passage.evidence_id])[0].visibility == "hidden"


def test_scopes_are_sets_and_embedders_compare_by_identity():
    assert agrag.Scope(["b", "a", "a"]) == agrag.Scope(["a", "b"])
    assert hash(agrag.Scope({"a", "b"})) == hash(agrag.Scope(["b", "a"]))
    assert agrag.Scope(["b", "a"]).document_keys == ["a", "b"]
    assert agrag.Embedder.hash() == agrag.Embedder.hash(384)
    assert len({agrag.Embedder.hash(), agrag.Embedder.hash()}) == 1
    assert agrag.Embedder.hash(8) != agrag.Embedder.hash(16)


def test_timeouts_at_the_extremes_are_usable(store, shipped_root):
    assert search_themes_sync(store, None, QUESTION, timeout=1e300).status is agrag.Status.OK
    tiny = search_themes_sync(store, None, QUESTION, timeout=1e-10)
    assert [f.leg for f in tiny.failures] == ["timeout"]
    with pytest.raises(ValueError, match="^timeout: must be a positive number of seconds, got -1e300"):
        search_themes_sync(store, None, QUESTION, timeout=-1e300)
    timed = agrag.open_store(
        shipped_root, settings={"MCP_TIMEOUT": datetime.timedelta(microseconds=1)}
    )
    assert [f.leg for f in search_themes_sync(timed, None, QUESTION).failures] == ["timeout"]


def test_a_huge_latest_gives_a_short_error(root_copy):
    (root_copy / "LATEST").write_text("a" * 1_000_000)
    with pytest.raises(agrag.IndexCorruptError) as e:
        agrag.open_store(root_copy)
    assert len(str(e.value)) < 1000


def test_reading_a_vector_stores_hits_is_within_the_deadline_and_interruptible(store):
    import time

    class SlowIndex:
        def __index__(self):
            time.sleep(1.5)
            return 0

    class Interrupting:
        def __index__(self):
            raise KeyboardInterrupt

    start = time.monotonic()
    answer = search_themes_sync(
        store, None, QUESTION, vector_store=ListStore([(SlowIndex(), 0.5)]), timeout=0.2
    )
    assert time.monotonic() - start < 1.0
    assert [f.leg for f in answer.failures] == ["timeout"]
    for timeout in (None, 60):
        with pytest.raises(KeyboardInterrupt):
            search_themes_sync(
                store, None, QUESTION, vector_store=ListStore([(Interrupting(), 0.5)]), timeout=timeout
            )


def test_agent_tools_take_any_mapping_and_numpy_numbers(store):
    import types

    tools = agrag.agent.tools(store)
    args = types.MappingProxyType({"query": QUESTION, "limit": np.int64(2)})
    out = tools.call("search_themes", args)
    assert not out["is_error"], out
    assert len(out["structured"]["themes"]) == 2
