"""Regenerates services/embedding/tests/fixtures/langchain4j_reference_embeddings.json.

The reference vectors come from langchain4j's own Java classes for the catalogue's jar-shipped
models (``BgeSmallEnV15EmbeddingModel``, the int8 ``BgeSmallEnV15QuantizedEmbeddingModel`` and
``AllMiniLmL6V2QuantizedEmbeddingModel``), run once through Maven: ONNX Runtime for Java and
DJL's Hugging Face tokenizer (its native library is bundled in the tokenizers jar; DJL is told to
stay offline). That is an implementation independent of ours (tokenisation, padding, pooling,
normalisation, the query instruction) over the same ONNX files. langchain4j does not add bge's
query instruction, so queries are sent to it with the instruction already prepended, exactly as
the catalogue's query_prefix does.

    .venv/bin/python scripts/langchain4j_reference.py   (needs mvn and a JDK 17; ~1 minute)
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memex.embedding.catalogue import lookup

HERE = Path(__file__).parent / "langchain4j-reference"
OUT = (
    Path(__file__).parent.parent
    / "services/embedding/tests/fixtures/langchain4j_reference_embeddings.json"
)
# Short texts (under 256 tokens: langchain4j splits texts over 510 tokens and averages the
# parts, which memex does not do), a mix of notes, questions, Unicode and a one-letter text.
DOCUMENTS = [
    "Shipped the retrieval refactor this week; indexing is twice as fast.",
    "Graham agreed to return 600 of the 900 euro deposit because of the stained carpet.",
    "Tomatoes need at least six hours of sun a day and deep, infrequent watering.",
    "Met Alice at the harbour. She wants to sell the boat before winter.",
    "# Plans > Q3\n\n- [ ] renew passport\n- [x] book dentist",
    "Café au lait, naïve résumé, 東京 and a rocket 🚀.",
    "x",
    "Mitochondrial DNA mutations accumulate with age in human skeletal muscle.",
]
QUERIES = [
    "how much of the deposit did Graham give back",
    "what did Alice say about the boat",
    "when should I water the tomatoes",
    "does mitochondrial DNA change with age",
]
MODELS = ("bge-small-en-v1.5", "bge-small-en-v1.5-q", "all-MiniLM-L6-v2-q")


def main() -> int:
    """Runs the Java reference for every model and writes the fixture."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        classpath_file = work / "classpath.txt"
        subprocess.run(
            [
                "mvn",
                "-q",
                "-f",
                str(HERE / "pom.xml"),
                "dependency:build-classpath",
                f"-Dmdep.outputFile={classpath_file}",
            ],
            check=True,
        )
        classpath = classpath_file.read_text().strip()
        subprocess.run(
            ["javac", "-cp", classpath, "-d", str(work), str(HERE / "Langchain4jReference.java")],
            check=True,
        )
        fixture: dict[str, object] = {
            "produced_with": "langchain4j 0.36.2 BgeSmallEnV15EmbeddingModel / "
            "BgeSmallEnV15QuantizedEmbeddingModel / AllMiniLmL6V2QuantizedEmbeddingModel (ONNX "
            "Runtime Java 1.20.0, DJL tokenizers 0.30.0), Java 17; "
            "scripts/langchain4j_reference.py",
            "models": {},
        }
        models: dict[str, object] = {}
        for name in MODELS:
            entry = lookup(name)
            items: list[dict[str, object]] = [
                {"kind": "document", "text": t, "input": t} for t in DOCUMENTS
            ]
            items += [
                {"kind": "query", "text": q, "input": entry.query_prefix + q} for q in QUERIES
            ]
            lines = work / f"{name}.in"
            lines.write_text(
                "".join(base64.b64encode(str(i["input"]).encode()).decode() + "\n" for i in items)
            )
            vectors = work / f"{name}.out"
            subprocess.run(
                [
                    "java",
                    "-Dai.djl.offline=true",
                    f"-DDJL_CACHE_DIR={work / 'djl'}",
                    "-cp",
                    f"{classpath}:{work}",
                    "Langchain4jReference",
                    name,
                    str(lines),
                    str(vectors),
                ],
                check=True,
            )
            rows = vectors.read_text().splitlines()
            for item, row in zip(items, rows, strict=True):
                item["embedding"] = [round(float(v), 7) for v in row.split(",")]
            models[name] = {"model_id": entry.model_id, "items": items}
        fixture["models"] = models
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
