"""The mem0 and LangGraph adapters on hand-made data in the systems' documented shapes (neither
system is installed: a mem0 get_all() result is plain JSON, a LangGraph Item is an object with
namespace, key, value, created_at, updated_at)."""

import datetime as dt

import numpy as np
import pytest

import memhealth
from memhealth import adapters

UTC = dt.timezone.utc
NOW = "2024-08-01T00:00:00Z"


def mem0_result():
    # the shape of Memory.get_all(user_id="alice") since mem0 v1.1: {"results": [...]}
    return {
        "results": [
            {"id": "3c90c3cc-0d44-4b50-8888-8dd25736052a", "memory": "Likes hiking on weekends",
             "hash": "a1b2", "metadata": {"category": "hobby"},
             "created_at": "2024-07-20T08:21:31.123456-07:00", "updated_at": None,
             "user_id": "alice"},
            {"id": "5d1e0b2e-1f0a-4a51-9d0c-0c0c0c0c0c0c", "memory": "likes hiking on weekends",
             "hash": "c3d4", "metadata": None,
             "created_at": "2024-07-21T09:00:00.000000-07:00", "updated_at": None,
             "user_id": "alice"},
            {"id": "7f000000-0000-4000-8000-000000000001", "memory": "Is vegetarian",
             "hash": "e5f6", "metadata": {}, "created_at": "2024-07-22T10:00:00Z",
             "updated_at": "2024-07-23T10:00:00Z", "user_id": "alice", "agent_id": "chef"},
        ],
        "relations": [],
    }


def test_from_mem0_maps_the_documented_fields():
    recs = adapters.from_mem0(mem0_result())
    d = {r["id"]: r for r in recs.to_dicts()}
    a = d["3c90c3cc-0d44-4b50-8888-8dd25736052a"]
    assert a["content"] == "Likes hiking on weekends"
    assert a["scope"] == "user:alice" and a["status"] == "active"
    assert a["metadata"] == {"category": "hobby", "mem0_hash": "a1b2"}
    # 08:21:31.123 at -07:00 is 15:21:31.123 UTC; the offset is kept
    assert a["created_at"] == "2024-07-20T08:21:31.123-07:00"
    assert d["7f000000-0000-4000-8000-000000000001"]["scope"] == "user:alice/agent:chef"
    # a plain list (mem0 before v1.1) is read too
    assert len(adapters.from_mem0(mem0_result()["results"])) == 3
    # updated_at None (never updated): the last update is the creation, not a missing time
    assert a["updated_at"] == a["created_at"]
    assert d["7f000000-0000-4000-8000-000000000001"]["updated_at"] == "2024-07-23T10:00:00.000Z"
    rep = memhealth.check(recs, now=NOW)
    assert rep.count("timestamp_inconsistent") == 0


def test_mem0_duplicates_found_repaired_and_written_back(tmp_path):
    v = np.zeros((3, 8), dtype=np.float32)
    v[:, 0] = 1.0  # the two hiking memories: same vector
    v[2, :] = 0.0
    v[2, 1] = 1.0
    recs = adapters.from_mem0(mem0_result(), v)
    rep = memhealth.check(recs, now=NOW)
    # "Likes hiking on weekends" / "likes hiking on weekends": one text after normalisation in
    # scope user:alice. The primary has the highest information score (detect/duplicates.hpp):
    # both model_extracted, recency almost equal (one day apart, ~10 days old), but 3c90... has
    # two metadata keys (category, mem0_hash) against one: +0.5
    dups = rep.of_kind("exact_duplicate")
    assert [f.record_ids for f in dups] == [["3c90c3cc-0d44-4b50-8888-8dd25736052a",
                                             "5d1e0b2e-1f0a-4a51-9d0c-0c0c0c0c0c0c"]]
    memhealth.apply(recs, memhealth.plan(recs, rep), tmp_path / "m.wal", approve=["tier2"])
    updates = {u["memory_id"]: u for u in adapters.to_mem0(recs)}
    old = updates["5d1e0b2e-1f0a-4a51-9d0c-0c0c0c0c0c0c"]
    assert old["metadata"]["memhealth_status"] == "archived"
    assert old["metadata"]["memhealth_duplicate_of"] == "3c90c3cc-0d44-4b50-8888-8dd25736052a"
    assert "mem0_hash" not in old["metadata"]
    assert old["text"] == "likes hiking on weekends"
    kept = updates["3c90c3cc-0d44-4b50-8888-8dd25736052a"]
    assert kept["metadata"]["memhealth_status"] == "active"
    assert kept["metadata"]["category"] == "hobby"
    assert "memhealth_duplicate_of" not in kept["metadata"]

    # mem0 returns the metadata we wrote: status and links come back as fields
    again = mem0_result()
    for m in again["results"]:
        m["metadata"] = updates[m["id"]]["metadata"]
    back = {r["id"]: r for r in adapters.from_mem0(again).to_dicts()}
    assert back["5d1e0b2e-1f0a-4a51-9d0c-0c0c0c0c0c0c"]["status"] == "archived"
    assert back["5d1e0b2e-1f0a-4a51-9d0c-0c0c0c0c0c0c"]["duplicate_of"] == (
        "3c90c3cc-0d44-4b50-8888-8dd25736052a")
    assert "memhealth_status" not in back["5d1e0b2e-1f0a-4a51-9d0c-0c0c0c0c0c0c"]["metadata"]


def test_from_mem0_rejects_other_shapes():
    with pytest.raises(ValueError, match="results"):
        adapters.from_mem0({"memories": []})


class Item:
    """A LangGraph store Item as documented: namespace, key, value, created_at, updated_at."""

    def __init__(self, namespace, key, value, created_at, updated_at):
        self.namespace = namespace
        self.key = key
        self.value = value
        self.created_at = created_at
        self.updated_at = updated_at


def langgraph_items():
    t = dt.datetime(2024, 7, 1, 12, 0, tzinfo=UTC)
    ns = ("memories", "user-42")
    return [
        Item(ns, "k1", {"content": "Prefers window seats", "tags": ["travel"]}, t,
             t + dt.timedelta(days=1)),
        Item(ns, "k2", {"content": "prefers window seats!", "source": "user_declared"},
             t + dt.timedelta(days=2), t + dt.timedelta(days=2)),
        Item(ns, "k3", {"kind": "Memory", "content": {"content": "Allergic to peanuts"}},
             t, t),
        Item(("profiles",), "p", {"name": "Ann"}, t, t),
    ]


def test_from_langgraph_maps_items():
    recs = adapters.from_langgraph(langgraph_items())
    d = {r["id"]: r for r in recs.to_dicts()}
    assert sorted(d) == ["memories/user-42/k1", "memories/user-42/k2", "memories/user-42/k3",
                         "profiles/p"]
    k1 = d["memories/user-42/k1"]
    assert k1["content"] == "Prefers window seats" and k1["scope"] == "memories/user-42"
    assert k1["created_at"].startswith("2024-07-01T12:00:00")
    assert k1["updated_at"].startswith("2024-07-02T12:00:00")
    assert k1["metadata"]["langgraph_value"] == {"content": "Prefers window seats",
                                                 "tags": ["travel"]}
    assert d["memories/user-42/k2"]["source"] == "user_declared"
    assert d["memories/user-42/k3"]["content"] == "Allergic to peanuts"  # LangMem's shape
    assert d["profiles/p"]["content"] == '{"name": "Ann"}'
    # dicts with the same fields work as items
    as_dicts = [vars(i) for i in langgraph_items()]
    assert adapters.from_langgraph(as_dicts).ids == recs.ids


def test_langgraph_repair_and_put_back(tmp_path):
    items = langgraph_items()
    v = np.zeros((4, 8), dtype=np.float32)
    v[0, 0] = v[1, 0] = 1.0
    v[2, 2] = 1.0
    v[3, 3] = 1.0
    recs = adapters.from_langgraph(items, v)
    rep = memhealth.check(recs, now=NOW)
    # k1 and k2 are one text after normalisation, same scope; k2 (user_declared) is the primary
    assert [f.record_ids for f in rep.of_kind("exact_duplicate")] == [
        ["memories/user-42/k2", "memories/user-42/k1"]]
    memhealth.apply(recs, memhealth.plan(recs, rep), tmp_path / "l.wal", approve=["tier2"])

    class Store:
        def __init__(self):
            self.puts = {}

        def put(self, namespace, key, value):
            self.puts[(namespace, key)] = value

    store = Store()
    n = adapters.put_langgraph(store, recs)
    assert n == 4
    k1 = store.puts[(("memories", "user-42"), "k1")]
    assert k1["status"] == "archived" and k1["duplicate_of"] == "memories/user-42/k2"
    assert k1["content"] == "Prefers window seats" and k1["tags"] == ["travel"]
    k2 = store.puts[(("memories", "user-42"), "k2")]
    assert k2["status"] == "active" and "duplicate_of" not in k2
    only = Store()
    assert adapters.put_langgraph(only, recs, only=["memories/user-42/k1"]) == 1
