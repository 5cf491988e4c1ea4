"""Large subjects get their own indexes: recall switches to them on its own and stays confined to the
subject, with new, superseded and keyword-only rows handled (recall restarted with a small threshold)."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.test_memory import remember
from tests.e2e.test_recall import recall, wait_embedded

THRESHOLD = 30
RECALL_ENV = {"CAIRN_SUBJECT_INDEX_MIN_ROWS": str(THRESHOLD)}


@pytest.fixture(scope="module")
async def indexing_recall(stack: CairnStack) -> AsyncIterator[CairnStack]:
    await stack.supervisor.stop("recall")
    await stack.start_service("recall", "cairn_recall", **RECALL_ENV)
    await stack.wait_ready()
    try:
        yield stack
    finally:
        await stack.supervisor.stop("recall")
        await stack.start_service("recall", "cairn_recall")
        await stack.wait_ready()


async def until_strategy(http: httpx.AsyncClient, key: str, query: str, *strategies: str) -> dict[str, Any]:
    """Recall until one of `strategies` serves it (the background index build or copy load finished)."""
    for _ in range(300):
        result = await recall(http, key, query=query, mode="semantic")
        if result["meta"]["strategy"] in strategies:
            return result
        await asyncio.sleep(0.2)
    raise AssertionError(f"recall never took any of {strategies}")


async def until_indexed(http: httpx.AsyncClient, key: str, query: str) -> dict[str, Any]:
    """Recall until the background build has finished and the subject's own indexes (or its copy) serve it."""
    return await until_strategy(http, key, query, "subject_ann", "subject_exact")


async def large_subject(http: httpx.AsyncClient, key: str, template: str, topics: list[str]) -> None:
    """Past the threshold by ten rows, `template` formatted with each row's number and topic, all embedded."""
    for i in range(THRESHOLD + 10):
        await remember(http, key, text=template.format(i=i, topic=topics[i % len(topics)]))
    await wait_embedded(http, key, THRESHOLD + 10)


async def test_a_large_subject_is_recalled_through_its_own_indexes(
    indexing_recall: CairnStack, http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.agent("big")
    neighbour = await tenant.agent("neighbour")
    topics = ["invoices", "hiking", "databases", "gardening", "violin", "taxes", "sourdough", "cycling"]
    await large_subject(http, key, "Note {i}: the user mentioned {topic} on day {i}", topics)
    await remember(http, neighbour, text="The user keeps a violin tuned to 432 Hz in the attic")
    await wait_embedded(http, neighbour, 1)

    first = await recall(http, key, query="what about the violin?", mode="semantic")
    assert first["meta"]["strategy"] == "ann"  # over the exact threshold, no own index yet
    indexed = await until_indexed(http, key, "what about the violin?")
    assert "violin" in indexed["data"][0]["memory"]["text"]
    assert all("432 Hz" not in h["memory"]["text"] for h in indexed["data"])  # the neighbour's row
    assert [h["memory"]["id"] for h in first["data"]] == [h["memory"]["id"] for h in indexed["data"]]

    # A row written after the build is in the subject's index once embedded.
    fresh = await remember(http, key, text="The user bought a cello bow made of pernambuco wood")
    await wait_embedded(http, key, THRESHOLD + 11)
    hits = (await recall(http, key, query="cello bow pernambuco", mode="hybrid"))["data"]
    assert hits[0]["memory"]["id"] == fresh["id"]
    keyword = await recall(http, key, query="pernambuco", mode="keyword")
    assert [h["memory"]["id"] for h in keyword["data"]] == [fresh["id"]]

    # Superseded rows leave the subject's indexes' results; include_superseded takes the exact path.
    response = await http.post(
        f"/api/v1/memory/{fresh['id']}/supersede",
        json={"text": "The user sold the cello bow"},
        headers=bearer(key),
    )
    assert response.status_code == 201, response.text
    live = await until_indexed(http, key, "cello bow pernambuco")
    assert fresh["id"] not in {h["memory"]["id"] for h in live["data"]}
    everything = await recall(
        http, key, query="cello bow pernambuco", mode="semantic", include_superseded=True
    )
    assert everything["meta"]["strategy"] == "exact"
    assert fresh["id"] in {h["memory"]["id"] for h in everything["data"]}

    # The neighbour (one row) is untouched by the big subject's indexes.
    other = await recall(http, neighbour, query="what about the violin?", mode="semantic")
    assert other["meta"]["strategy"] == "exact"
    assert [h["memory"]["text"] for h in other["data"]] == [
        "The user keeps a violin tuned to 432 Hz in the attic"
    ]


async def test_a_large_subjects_vector_copy_serves_it_and_never_serves_stale_rows(
    indexing_recall: CairnStack, http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.agent("copied")
    neighbour = await tenant.agent("copied-neighbour")
    topics = ["kayaks", "compilers", "orchids", "chess", "mortgages", "tea", "tango", "fossils"]
    await large_subject(http, key, "Entry {i}: the user talked about {topic} on day {i}", topics)
    await remember(http, neighbour, text="The user collects fossils of ammonites from Dorset")
    await wait_embedded(http, neighbour, 1)
    query = "which fossils does the user collect?"

    ann = await until_strategy(http, key, query, "subject_ann")  # its own indexes; the copy loads meanwhile
    copied = await until_strategy(http, key, query, "subject_exact")
    # On a subject this small, the HNSW walk at ef_search 400 is exact too: the same memories, same order.
    assert [h["memory"]["id"] for h in copied["data"]] == [h["memory"]["id"] for h in ann["data"]]
    assert [h["score"] for h in copied["data"]] == pytest.approx([h["score"] for h in ann["data"]], abs=1e-4)
    assert all("Dorset" not in h["memory"]["text"] for h in copied["data"])  # the neighbour's row

    # Forgotten: gone from the very next recall, whichever path serves it (the version moved).
    top = copied["data"][0]["memory"]["id"]
    response = await http.delete(f"/api/v1/memory/{top}", headers=bearer(key))
    assert response.status_code == 200, response.text
    after = await recall(http, key, query=query, mode="semantic")
    assert after["meta"]["strategy"] in ("subject_ann", "subject_exact")
    assert top not in {h["memory"]["id"] for h in after["data"]}

    # Written and embedded: found by the very next recall, then from the reloaded copy too.
    fresh = await remember(http, key, text="The user collects trilobite fossils from Morocco")
    await wait_embedded(http, key, THRESHOLD + 10)  # 39 live + the fresh one
    first = await recall(http, key, query="trilobite fossils Morocco", mode="semantic")
    assert first["data"][0]["memory"]["id"] == fresh["id"]
    reloaded = await until_strategy(http, key, "trilobite fossils Morocco", "subject_exact")
    assert reloaded["data"][0]["memory"]["id"] == fresh["id"]
    assert top not in {h["memory"]["id"] for h in reloaded["data"]}


async def keyword_sides(stack: CairnStack) -> dict[str, float]:
    """The recall process's keyword-side counters: how many large-subject keyword sides each source scored."""
    async with httpx.AsyncClient(base_url=stack.http_url("recall"), timeout=10) as client:
        text = (await client.get("/metrics")).text
    sides = {}
    for line in text.splitlines():
        if line.startswith("cairn_recall_keyword_sides_total{"):
            source = line.split('source="', 1)[1].split('"', 1)[0]
            sides[source] = float(line.rsplit(" ", 1)[1])
    return sides


async def keyword_recall(
    stack: CairnStack, http: httpx.AsyncClient, key: str, query: str
) -> tuple[list[str], str]:
    """A keyword recall's texts, and which source scored its keyword side."""
    before = await keyword_sides(stack)
    result = await recall(http, key, query=query, mode="keyword")
    after = await keyword_sides(stack)
    (source,) = [s for s in after if after[s] > before.get(s, 0.0)]
    return [h["memory"]["text"] for h in result["data"]], source


async def test_a_large_subjects_postings_copy_serves_its_keywords_and_never_serves_stale_rows(
    indexing_recall: CairnStack, http: httpx.AsyncClient, tenant: TenantHandle
) -> None:
    key = await tenant.agent("worded")
    neighbour = await tenant.agent("worded-neighbour")
    topics = ["kayaks", "compilers", "orchids", "chess", "mortgages", "tea", "tango", "fossils"]
    await large_subject(http, key, "Item {i}: the user spoke of {topic} on day {i}", topics)
    await remember(http, neighbour, text="The user keeps a pet axolotl named Quokka")
    await until_indexed(http, key, "orchids")

    async def until_copy(query: str) -> list[str]:
        for _ in range(100):
            texts, source = await keyword_recall(indexing_recall, http, key, query)
            if source == "copy":
                return texts
            await asyncio.sleep(0.2)
        raise AssertionError("the postings copy never served")

    assert sorted(await until_copy("orchids")) == sorted(
        f"Item {i}: the user spoke of orchids on day {i}" for i in range(2, THRESHOLD + 10, 8)
    )
    assert await until_copy("axolotl quokka") == []  # the neighbour's words are not in this subject

    # A plain write (no vector yet) is found by its words at once: the live set moved, so SQL serves it.
    fresh = await remember(http, key, text="The user adopted an axolotl called Pistachio")
    texts, source = await keyword_recall(indexing_recall, http, key, "axolotl")
    assert (texts, source) == (["The user adopted an axolotl called Pistachio"], "sql")
    assert await until_copy("axolotl") == ["The user adopted an axolotl called Pistachio"]  # reloaded

    # Forgotten: gone from the very next recall.
    response = await http.delete(f"/api/v1/memory/{fresh['id']}", headers=bearer(key))
    assert response.status_code == 200, response.text
    texts, _ = await keyword_recall(indexing_recall, http, key, "axolotl")
    assert texts == []

    # Superseded: the new text is found and the old one is not, from the very next recall on.
    old = await remember(http, key, text="The user's kayak is painted vermilion")
    await until_copy("vermilion")
    response = await http.post(
        f"/api/v1/memory/{old['id']}/supersede",
        json={"text": "The user's kayak is painted teal"},
        headers=bearer(key),
    )
    assert response.status_code == 201, response.text
    assert (await keyword_recall(indexing_recall, http, key, "vermilion"))[0] == []
    assert await until_copy("teal vermilion") == ["The user's kayak is painted teal"]
