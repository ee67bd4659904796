"""The chunk index is declared and queried through redisvl, no Redis needed: the schema the store
declares (the same index Keel always built, so existing data stays searchable), the queries it
runs, the redis-py errors an unreachable Redis still raises, and a scan that no module of the
installed keel packages hand-writes RediSearch commands or query syntax. The live index is
checked against the declared schema in integration_tests/test_chunk_index_live.py."""

from __future__ import annotations

import ast
import importlib.util
import re
import socket
from pathlib import Path

import numpy as np
import pytest
import redis
from redis.backoff import NoBackoff
from redis.commands.search.field import NumericField, TagField, TextField, VectorField
from redis.retry import Retry
from redisvl.query import FilterQuery, VectorQuery
from redisvl.schema import IndexSchema

from keel.core.settings.storage import StorageSettings
from keel.stores.chunk_store import RedisChunkStore
from tests.fakes import BagOfWordsEmbeddings

TAGS = ("uuid", "conversation_id", "source", "doc_id", "parent_id")


def store(**settings) -> RedisChunkStore:
    return RedisChunkStore(redis.Redis(), BagOfWordsEmbeddings(), StorageSettings(index_name="idx", **settings))


def test_the_store_declares_its_index_as_a_redisvl_schema_of_hashes_under_the_child_prefix():
    schema = store().index_schema
    assert isinstance(schema, IndexSchema)
    assert (schema.index.name, schema.index.prefix, schema.index.storage_type.value) == ("idx", "idx:child:", "hash")
    assert {name: field.type.value for name, field in schema.fields.items()} == {
        "text": "text", "embedding": "vector", **dict.fromkeys(TAGS, "tag"), "page": "numeric"}
    for name in TAGS:  # one tag per value (file names hold commas), case kept ("Alice" is not "alice")
        attrs = schema.fields[name].attrs
        assert (attrs.separator, attrs.case_sensitive) == ("\x1f", True), name
    vector = schema.fields["embedding"].attrs
    assert (vector.algorithm.value, vector.datatype.value, vector.distance_metric.value, vector.dims) == (
        "FLAT", "FLOAT32", "COSINE", BagOfWordsEmbeddings.dim)


def test_the_declared_flat_index_sends_the_same_ft_create_fields_as_before():
    """Byte for byte the fields Keel's index was created with before it used redisvl: an index
    that already holds users' documents is the one the store declares."""
    dim = BagOfWordsEmbeddings.dim
    before = [
        TextField("text"),
        VectorField("embedding", "FLAT", {"TYPE": "FLOAT32", "DIM": dim, "DISTANCE_METRIC": "COSINE"}),
        *(TagField(name, separator="\x1f", case_sensitive=True) for name in TAGS),
        NumericField("page"),
    ]
    declared = store().index_schema.redis_fields
    assert [field.redis_args() for field in declared] == [field.redis_args() for field in before]


def test_an_hnsw_index_takes_its_graph_parameters_from_the_settings():
    hnsw = store(vector_algorithm="HNSW", hnsw_m=8, hnsw_ef_construction=50, hnsw_ef_runtime=20)
    vector = hnsw.index_schema.fields["embedding"].attrs
    assert (vector.algorithm.value, vector.m, vector.ef_construction, vector.ef_runtime) == ("HNSW", 8, 50, 20)
    with pytest.raises(ValueError, match="FLAT.*HNSW"):  # the settings or the schema refuse it, naming both
        store(vector_algorithm="IVF").index_schema


def test_queries_are_redisvl_queries_filtered_by_the_escaped_user_clause():
    from keel.stores.chunk_queries import child_filter, knn_query, neighbour_query

    vector = np.ones(4, dtype=np.float32)
    query = knn_query(child_filter("a|b", doc_ids=["d}"]), 5, ("uuid", "text"), vector=vector)
    assert isinstance(query, VectorQuery)
    assert query.get_args()[0] == r"((@uuid:{a\|b} @doc_id:{d\}}))=>[KNN 5 @embedding $vec AS vector_distance]"
    assert query.params == {"vec": vector.tobytes()}
    around = neighbour_query("u", [("d", 3)], radius=1)
    assert isinstance(around, FilterQuery)
    assert str(around.filter) == "(@uuid:{u} (@doc_id:{d} @page:[2 4]))"


def test_a_knn_query_sets_ef_runtime_only_when_asked():
    from keel.stores.chunk_queries import knn_query

    query = knn_query("*", 3, ("uuid",), ef_runtime=40, vector=np.zeros(2, dtype=np.float32))
    assert "EF_RUNTIME $EF" in query.get_args()[0] and query.params["EF"] == 40
    with pytest.raises(ValueError, match="k must be"):
        knn_query("*", 0, ("uuid",))


NO_RETRY = Retry(NoBackoff(), 0)  # redis-py's default retries with backoff would only slow these down


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_redis_still_raises_redis_pys_connection_error():
    """The ingest report and the outage handling know Redis is down by redis-py's error types;
    redisvl wraps them in its own RedisSearchError, which the store unwraps."""
    client = redis.Redis(port=closed_port(), socket_connect_timeout=0.5, retry=NO_RETRY)
    unreachable = RedisChunkStore(client, BagOfWordsEmbeddings(), StorageSettings(index_name="idx"))
    with pytest.raises(redis.ConnectionError):
        unreachable.ensure_index()
    unreachable._index_ready = True  # as if the index had been checked before Redis went away
    with pytest.raises(redis.ConnectionError):
        unreachable.search_children([1.0] * BagOfWordsEmbeddings.dim, 3, "u")
    with pytest.raises(redis.ConnectionError):
        unreachable.child_vectors("u", ["p"])


def test_a_redis_that_does_not_answer_in_time_still_raises_redis_pys_timeout_error():
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        client = redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=0.2, retry=NO_RETRY)
        stalled = RedisChunkStore(client, BagOfWordsEmbeddings(), StorageSettings(index_name="idx"))
        stalled._index_ready = True
        with pytest.raises(redis.TimeoutError):
            stalled.search_children([1.0] * BagOfWordsEmbeddings.dim, 3, "u")
        with pytest.raises(redis.TimeoutError):
            stalled.neighbour_parent_ids("u", [("d", 2)])


# --- no hand-written RediSearch commands or query syntax ------------------------------------------

# Hand-built RediSearch syntax: a KNN clause, a tag, numeric or text clause of a named field.
RAW_SYNTAX = re.compile(r"=>\s*\[KNN|@\w+:\s*[{\[(]")


def keel_sources() -> list[Path]:
    """Every module of the installed keel packages (the card folders are installed as keel.*)."""
    roots = []
    for package in ("keel", "keel.graph", "keel.nodes", "keel.chains", "keel.retrievers", "keel.loaders"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            roots.append(Path(next(iter(spec.submodule_search_locations))))
    return sorted({path for root in roots for path in root.rglob("*.py")})


def literal_text(node: ast.AST) -> str | None:
    """A string constant, or an f-string with each placeholder read as ``x``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "x" for part in node.values)
    return None


def raw_search_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr)
    }
    inside_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    found = []
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in inside_fstrings:
            continue
        text = literal_text(node)
        if text is not None and (re.match(r"\s*FT\.[A-Z_]+", text) or RAW_SYNTAX.search(text)):
            found.append(f"{path.name}:{node.lineno}: {text!r}")
    return found


def test_no_keel_module_hand_writes_redisearch_commands_or_query_syntax():
    """Index, filters and KNN are redisvl's (schema, Tag/Num/Text filters, VectorQuery): a value
    can only reach a query through its escaping, and no module builds FT.* commands itself."""
    sources = keel_sources()
    assert any(path.name == "chunk_store.py" for path in sources)
    found = [line for path in sources for line in raw_search_strings(path)]
    assert found == []


def test_the_scan_sees_hand_written_syntax(tmp_path):
    source = 'clause = f"@{field}:{{{value}}}"\nknn = f"{clause}=>[KNN {k} @embedding $vec]"\ncmd = "FT.SEARCH"\n'
    path = tmp_path / "probe.py"
    path.write_text('"""A docstring may name FT.SEARCH and @uuid:{u}."""\n' + source, encoding="utf-8")
    assert len(raw_search_strings(path)) == 3
