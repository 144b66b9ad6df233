"""The rerank stage: its arithmetic, the ONNX cross-encoder engine on a small graph this test
builds (with onnx.helper) and a word-level tokenizer it builds (with `tokenizers`), the stage
inside a real search over the embedded store, and bad configurations failing at startup."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import grpc
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from pydantic import ValidationError
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.core import open_core
from memex.retrieval.rerank import combine, order
from memex.retrieval.rerank_onnx import (
    BiEncoderRescorer,
    CrossEncoder,
    RerankModelError,
    open_reranker,
)
from memex.retrieval.search import Filters, Query, Searcher
from memex.retrieval.server import build
from memex.retrieval.store.embedded import EmbeddedStore
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.testing import serving
from memex.testing.retrieval import DIM, note, tuning, vec

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "sailing", "tomatoes"]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
VOCAB = {w: i for i, w in enumerate([*SPECIAL, *WORDS])}


def write_tokenizer(folder: Path) -> None:
    """A word-level BERT-style tokenizer: [CLS] query [SEP] passage [SEP], passage type 1."""
    tok = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    tok.save(str(folder / "tokenizer.json"))


def overlap_graph(
    inputs: Sequence[str] = ("input_ids", "attention_mask", "token_type_ids"),
    logits_shape: Sequence[str | int] = ("batch", 1),
) -> onnx.ModelProto:
    """A pair model whose logit is the number of (passage token, query token) pairs with the
    same id, special tokens excluded: a real function of both texts, easy to predict."""
    ids, mask, types = inputs[0], inputs[1], inputs[2]
    nodes = [
        helper.make_node("Cast", [mask], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Cast", [types], ["t"], to=TensorProto.FLOAT),
        # Words only: ids >= 4 (the special tokens come first in the vocabulary).
        helper.make_node("Greater", [ids, "three"], ["is_word_b"]),
        helper.make_node("Cast", ["is_word_b"], ["is_word"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["m", "is_word"], ["mw"]),
        helper.make_node("Mul", ["mw", "t"], ["passage"]),  # segment B
        helper.make_node("Sub", ["mw", "passage"], ["query"]),  # segment A
        helper.make_node("Unsqueeze", [ids, "ax2"], ["ids_col"]),
        helper.make_node("Unsqueeze", [ids, "ax1"], ["ids_row"]),
        helper.make_node("Equal", ["ids_col", "ids_row"], ["same_b"]),
        helper.make_node("Cast", ["same_b"], ["same"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["passage", "ax2"], ["p_col"]),
        helper.make_node("Unsqueeze", ["query", "ax1"], ["q_row"]),
        helper.make_node("Mul", ["same", "p_col"], ["s1"]),
        helper.make_node("Mul", ["s1", "q_row"], ["s2"]),
        helper.make_node("ReduceSum", ["s2", "axes"], ["logits"], keepdims=0),
        helper.make_node("Reshape", ["logits", "out_shape"], ["out"]),
    ]
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "overlap_cross_encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in inputs],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, list(logits_shape))],
        [
            numpy_helper.from_array(np.array(3, np.int64), "three"),
            numpy_helper.from_array(np.array([1], np.int64), "ax1"),
            numpy_helper.from_array(np.array([2], np.int64), "ax2"),
            numpy_helper.from_array(np.array([1, 2], np.int64), "axes"),
            numpy_helper.from_array(
                np.array([-1, 1] if len(logits_shape) == 2 else [-1], np.int64), "out_shape"
            ),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "overlap-ce"
    folder.mkdir()
    onnx.save(overlap_graph(), str(folder / "model.onnx"))
    write_tokenizer(folder)
    return folder


def test_combine_and_order_keep_ties_in_fused_order() -> None:
    assert combine([3.0, 2.0, 1.0], [0.0, 5.0, 10.0], 1.0) == [0.0, 0.5, 1.0]
    assert combine([3.0, 2.0, 1.0], [0.0, 5.0, 10.0], 0.0) == [1.0, 0.5, 0.0]
    assert combine([3.0, 1.0], [0.0, 10.0], 0.25) == [0.75, 0.25]
    assert order([1.0, 2.0, 2.0, 0.5, 2.0]) == [1, 2, 4, 0, 3]
    assert combine([1.0, 1.0], [7.0, 7.0], 0.5) == [1.0, 1.0]  # nothing to tell apart
    with pytest.raises(ValueError, match="2 model scores for 3"):
        combine([1.0, 2.0, 3.0], [1.0, 2.0], 1.0)


def test_cross_encoder_scores_pairs_in_order(model_dir: Path) -> None:
    ce = CrossEncoder(model_dir, batch_size=2)
    passages = ["apple apple banana", "cherry", "banana fig grape date", "apple banana", "zzz"]
    # Batches are formed by length; scores must still come back in the passages' order.
    assert ce.score("apple banana", passages) == [3.0, 0.0, 1.0, 2.0, 0.0]
    assert ce.score("apple", []) == []


def test_cross_encoder_cuts_the_passage_not_the_query(model_dir: Path) -> None:
    ce = CrossEncoder(model_dir, max_tokens=8)
    # [CLS] + 3 query words + [SEP] leaves 3 tokens: two passage words and the final [SEP].
    assert ce.score("apple banana cherry", ["fig apple banana cherry"]) == [1.0]


class _AxisEmbedder:
    """Every query embeds to one fixed vector (the vector channel is not under test here)."""

    dimension = DIM
    model_id = "fixed"

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        return np.array([vec(1.0)] * len(texts), dtype=np.float32)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    s = await EmbeddedStore.open(tmp_path / "store", DIM)
    # Vector order: n1 (nearest) .. n4; the model prefers the passage with the most query words.
    # n3, the model's favourite, is sensitive and tagged: filters leave it out unless asked.
    for title, text, v, secret in (
        ("n1", "apple", vec(1.0, 0.1), False),
        ("n2", "apple banana", vec(1.0, 0.3), False),
        ("n3", "apple banana cherry", vec(1.0, 0.6), True),
        ("n4", "apple banana", vec(1.0, 0.9), False),
    ):
        tags = ("secret",) if secret else ()
        await s.upsert_note("t", note(title, [(text, v)], tags=tags, sensitive=secret))
    yield s
    await s.close()


def _searcher(store: EmbeddedStore, reranker: CrossEncoder | None, depth: int = 30) -> Searcher:
    settings = tuning(rrf_k=5, weights={"vector": 1.0}, depth=100, rerank_depth=depth)
    return Searcher(store, _AxisEmbedder(), settings, reranker=reranker)


async def _titles(searcher: Searcher, text: str, **filters: object) -> list[str]:
    query = Query("t", text, ("vector",), Filters(**filters), k=10)  # type: ignore[arg-type]
    return [i.title for i in (await searcher.search(query)).items]


async def test_search_unchanged_without_a_reranker(store: EmbeddedStore) -> None:
    titles = await _titles(_searcher(store, None), "apple banana cherry", include_sensitive=True)
    assert titles == ["n1", "n2", "n3", "n4"]  # the vector order


async def test_rerank_reorders_by_the_model_and_keeps_ties_stable(
    store: EmbeddedStore, model_dir: Path
) -> None:
    searcher = _searcher(store, CrossEncoder(model_dir))
    # Titles are part of the passage ("n2 > ..."), unknown words to the tokenizer: score 0.
    # Scores: n3 3, n2 2, n4 2, n1 1; n2 and n4 tie and keep their fused order.
    assert await _titles(searcher, "apple banana cherry", include_sensitive=True) == [
        "n3",
        "n2",
        "n4",
        "n1",
    ]
    result = await searcher.search(Query("t", "apple banana cherry", ("vector",), k=2))
    assert [(i.title, i.rerank, i.score) for i in result.items] == [
        ("n2", 2.0, 1.0),
        ("n4", 2.0, 1.0),
    ]
    assert all(c.channel == "vector" and c.rank > 0 for i in result.items for c in i.channels)


async def test_rerank_never_brings_back_a_filtered_item(
    store: EmbeddedStore, model_dir: Path
) -> None:
    searcher = _searcher(store, CrossEncoder(model_dir))
    text = "apple banana cherry"
    assert await _titles(searcher, text) == ["n2", "n4", "n1"]  # n3 is sensitive
    assert await _titles(searcher, text, tags=("secret",)) == []
    assert await _titles(searcher, text, tags=("secret",), include_sensitive=True) == ["n3"]
    assert await _titles(searcher, text, start="2030-01-01", include_sensitive=True) == []


async def test_rerank_depth_bounds_the_candidates(store: EmbeddedStore, model_dir: Path) -> None:
    # Depth 2 but k=3: at least k candidates are reranked, so every item returned was rescored.
    searcher = _searcher(store, CrossEncoder(model_dir), depth=2)
    query = Query("t", "apple banana cherry", ("vector",), Filters(include_sensitive=True), k=3)
    result = await searcher.search(query)
    assert [i.title for i in result.items] == ["n3", "n2", "n1"]
    assert all(i.rerank is not None for i in result.items)


def test_bad_configuration_fails_at_startup_with_what_to_fix(
    tmp_path: Path, model_dir: Path
) -> None:
    with pytest.raises(ValidationError, match="needs MEMEX_RETRIEVAL_RERANK_MODEL_DIR"):
        RetrievalSettings(rerank="cross-encoder")
    assert open_reranker(RetrievalSettings()) is None

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RerankModelError, match=r"has no model.onnx: put the rerank model"):
        open_reranker(RetrievalSettings(rerank="cross-encoder", rerank_model_dir=empty))
    onnx.save(overlap_graph(), str(empty / "model.onnx"))
    with pytest.raises(RerankModelError, match=r"has no tokenizer\.json"):
        CrossEncoder(empty)

    (empty / "tokenizer.json").write_text("{not json")
    with pytest.raises(RerankModelError, match="is not a tokenizers JSON file"):
        CrossEncoder(empty)

    (model_dir / "model.onnx").write_bytes(b"not a graph")
    with pytest.raises(RerankModelError, match="cannot be loaded by ONNX Runtime"):
        CrossEncoder(model_dir)

    onnx.save(
        overlap_graph(("pixel_ids", "attention_mask", "token_type_ids")),
        str(model_dir / "model.onnx"),
    )
    with pytest.raises(RerankModelError, match=r"takes inputs \['pixel_ids'.*must take input_ids"):
        CrossEncoder(model_dir)


def test_a_graph_with_more_than_one_logit_per_pair_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "wide"
    folder.mkdir()
    write_tokenizer(folder)
    model = overlap_graph()
    # Two logits per pair (a two-class head) instead of one.
    model.graph.node[-1].input[1] = "two"
    model.graph.initializer.append(numpy_helper.from_array(np.array([-1, 2], np.int64), "two"))
    model.graph.node.insert(
        len(model.graph.node) - 1,
        helper.make_node("Concat", ["logits", "logits"], ["pair"], axis=0),
    )
    model.graph.node[-1].input[0] = "pair"
    model.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 2
    onnx.save(model, str(folder / "model.onnx"))
    with pytest.raises(RerankModelError, match=r"output of shape \[1, 2\] for one pair"):
        CrossEncoder(folder)


def bag_of_words_encoder(folder: Path) -> None:
    """A sentence encoder whose hidden state is each token's one-hot row: mean pooling makes a
    text's vector its bag of tokens, so the cosines are easy to predict."""
    table = np.eye(len(VOCAB), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])],
        "bag_of_words",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", len(VOCAB)]
            )
        ],
        [numpy_helper.from_array(table, "table")],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
        str(folder / "model.onnx"),
    )
    write_tokenizer(folder)


def test_bi_encoder_rescores_by_cosine_with_the_query_prefix(tmp_path: Path) -> None:
    bag_of_words_encoder(tmp_path)
    settings = RetrievalSettings(
        rerank="bi-encoder",
        rerank_model_dir=tmp_path,
        rerank_pooling="mean",
        rerank_query_prefix="fig ",
    )
    rescorer = open_reranker(settings)
    assert isinstance(rescorer, BiEncoderRescorer)

    def bag(text: str) -> np.ndarray:
        v = np.zeros(len(VOCAB))
        for token in ["[CLS]", *text.split(), "[SEP]"]:
            v[VOCAB[token]] += 1
        return v / np.linalg.norm(v)

    passages = ["apple", "fig apple", "grape grape grape"]
    expected = [float(bag(p) @ bag("fig apple")) for p in passages]
    assert rescorer.score("apple", passages) == pytest.approx(expected, rel=1e-5)
    assert expected.index(max(expected)) == 1  # the prefix is part of the query


def test_bi_encoder_refuses_a_graph_without_vectors(model_dir: Path) -> None:
    # One number per text (a cross-encoder's head) is not a sentence vector.
    onnx.save(overlap_graph(logits_shape=("batch",)), str(model_dir / "model.onnx"))
    with pytest.raises(RerankModelError, match="first output has rank 1; a sentence encoder"):
        BiEncoderRescorer(model_dir)


async def test_the_service_reranks_and_reports_the_model_score(
    tmp_path: Path, embedding_addr: str, vault: Path, model_dir: Path
) -> None:
    settings = RetrievalSettings(
        port=0,
        embedding_addr=embedding_addr,
        store_dir=tmp_path / "store",
        recency_half_life_days=0,
        fusion="minmax",
        rerank="cross-encoder",
        rerank_model_dir=model_dir,
    )
    async with (
        serving(build(settings)) as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        async for _ in stub.IndexVault(retrieval_pb2.IndexVaultRequest(vault_path=str(vault))):
            pass
        reply = await stub.Search(retrieval_pb2.SearchRequest(query="Sailing or tomatoes?", k=3))
    items = list(reply.items)
    assert len(items) == 3 and all(i.HasField("rerank_score") for i in items)
    # The two notes that say "sailing" or "tomatoes" once each lead; the model's score decides.
    assert [i.rerank_score for i in items] == sorted((i.rerank_score for i in items), reverse=True)
    assert items[0].rerank_score >= 1 and items[0].score == 1.0
    assert all(c.rank > 0 for i in items for c in i.channel_scores) and items[0].fused_score > 0
    assert all(not i.sensitive for i in items)


async def test_a_bad_rerank_model_stops_the_service_before_it_starts(tmp_path: Path) -> None:
    settings = RetrievalSettings(
        port=0, store_dir=tmp_path / "store", rerank="bi-encoder", rerank_model_dir=tmp_path
    )
    with pytest.raises(RerankModelError, match=r"has no model\.onnx"):
        async with open_core(settings):
            pass
