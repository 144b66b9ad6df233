"""The terms keyword search matches on, the same for every backend.

The embedded store's tantivy index analyses text with ``analyzer()``: split at anything that is not
a letter or digit, lower-case, fold diacritics, English (Snowball) stemming. Weaviate's BM25 has no
stemming (none of its tokenizations stems), which cost its keyword channel 0.041 nDCG@10 on
scifact (docs/retrieval.md). So the Weaviate backend stores each chunk's search text as these
terms (``indexed_text``) and searches for the query's terms (``query_terms``): both backends then
match "running" with "runs" and rank by the same words.
"""

from __future__ import annotations

import re

import tantivy

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 64

# Function words match nearly every chunk: BM25 gives them almost no weight, but scoring every
# chunk they match dominates the cost of an OR query. They are dropped unless nothing else is left.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
    ]
)


def query_words(query: str) -> list[str]:
    """The words a keyword search looks for: lower-cased, deduplicated, stopwords dropped unless
    the query is only stopwords, at most ``MAX_QUERY_TERMS``."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    return ([w for w in words if w not in STOPWORDS] or words)[:MAX_QUERY_TERMS]


def analyzer() -> tantivy.TextAnalyzer:
    """Close to FTS5's ``porter unicode61 remove_diacritics 2``: split at anything that is not a
    letter or digit (so ``_`` separates), lower-case, fold diacritics, English stemming (Snowball,
    where FTS5 has the original Porter). Tokens over 255 bytes are dropped (tantivy's own limit is
    ~64 KiB)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(255))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


_ANALYZER = analyzer()


def query_terms(query: str) -> list[str]:
    """The distinct terms a keyword search looks for: the query's words (``query_words``:
    stopwords dropped unless the query is only stopwords), each analysed; a word the analyzer
    splits (``foo_bar``) counts as its parts."""
    terms: dict[str, None] = {}
    for word in query_words(query):
        terms.update(dict.fromkeys(_ANALYZER.analyze(word)))
    return list(terms)


def indexed_text(text: str) -> str:
    """``text`` as the analysed terms a plain word tokenizer (Weaviate's ``word``) indexes
    unchanged: stemmed, lower-cased, diacritics folded, separated by spaces."""
    return " ".join(_ANALYZER.analyze(text))
